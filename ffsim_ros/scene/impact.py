"""Contact laws at a point: the ``J^T F_c`` term of [S0 eq. 41], normal and Coulomb tangential.

(Coulomb friction at the contact is part of the contact force ``F_c`` and acts through ``J^T``;
``F_f`` of [S0 eq. 41] is the joint friction,
:func:`ffsim_ros.dynamics.kernels.friction.joint_friction`.)

Two systems ``a`` and ``b`` touch at a point ``p`` with unit normal ``n`` pointing from ``b``
into ``a``. The velocity of the material point of each system at ``p`` is ``J v`` with ``J``
the (3, nv) point Jacobian (:func:`point_jacobian`, [S0 eq. 5] at ``p``), and the relative
velocity is ``u = J_a v_a - J_b v_b`` (``n . u < 0``: approaching). A contact impulse ``P``
(on ``a``; ``-P`` on ``b``) enters [S0 eq. 41] integrated over the impact as the generalized
impulse ``J^T P``: ``H dv = J_a^T P``, so that

    du = W dP,     W = J_a H_a^-1 J_a^T + J_b H_b^-1 J_b^T                            (1)

with ``H_a``, ``H_b`` the *full* free-floating generalized inertias of systems ``a`` and ``b``
[S0 eqs. 24-27] (base included: nothing is anchored during an impact; ``H_b`` here is not the
base inertia ``H_b = H0`` of [S0 eq. 27], see "Code names that differ from the seeds'" in
docs/equations.md). ``J H^-1 J^T`` is Yoshida's extended inversed inertia tensor at the
contact point (:func:`inverse_inertia`; its 6x6 form with the angular rows serves the grasp).
The impulse acts on both systems at the same point, so the total linear and angular momentum
is unchanged whatever ``P`` is.

Rigid impact (:class:`ImpactLaw`, :func:`solve_impact`): Stronge's energetic restitution with
Coulomb friction, integrated over the normal impulse ``p`` as Routh's method does
(Stronge, *Impact Mechanics*, 2000, chs. 4-5). While the contact slides in the direction
``s = u_t / |u_t|`` the friction impulse grows as ``-mu s dp``; when the slip stops it sticks
if the friction cone can hold it (``|dP_t / dp| <= mu``, ``dP_t / dp = -W_tt^-1 W_tn``), else
it slides again in the direction the slip grows in: the ray ``W_tn - mu W_tt s = lam s``,
``lam > 0``, which it keeps to the end. A slide whose direction stays fixed (that restart, a slip
in one line) is a straight line in ``u``, followed exactly to its events; one whose
direction turns, by RK4 with steps under ``|u_t| / (mu lambda_max(W_tt) + |du_t/dp|) / 10``
(the direction equation is stiff near zero slip). Compression ends when ``u_n = 0``; the
restitution phase ends when the normal impulse has given back ``e^2`` times the work it took
in compression (``int u_n dp``). With ``e`` in [0, 1] the kinetic energy never increases
(energy-consistent, unlike Newton's kinematic restitution with friction). Frictionless it
reduces to ``P = -(1 + e) u_n / (n^T W n) n``.

Compliant contact (:class:`CompliantLaw`): a spring-damper normal force
``F_n = max(0, k d - c u_n)`` on the penetration depth ``d`` and Coulomb friction regularized
below a stiction speed, ``F_t = -mu F_n u_t / max(|u_t|, v_s)`` (sticking becomes a stiff
viscous law). The scene applies it as equal and opposite impulses over ``h = dt / 2`` before
and after each step (Strang splitting), which keeps the total momentum exact. Explicit in time,
the viscous slope ``mu F_n / v_s`` overshoots: the friction impulse ``F_t h`` alone reverses
the slip once ``mu F_n h s^T W s / v_s > 1`` (``s = u_t / |u_t|``) and creates energy beyond 2,
at any stiffness (~70 at the peak force of two 1 kg spheres meeting at 0.5 m/s, 2e4 N/m,
``mu`` = 0.4, ``v_s`` = 1 mm/s, ``dt`` = 1 ms). :meth:`CompliantLaw.impulse` therefore limits
the friction impulse ``-lambda s`` to the sticking impulse along ``s``, the one that brings the
slip along ``s`` to zero once the normal impulse ``P_n n`` has acted:

    lambda <= max(0, s . (u + P_n W n)) / (s^T W s)                                     (2)

With ``u' = u + P_n W n`` the kinetic energy change of the impulse splits exactly as
``[u . P_n n + P_n^2 n^T W n / 2] + [-lambda s . u' + lambda^2 s^T W s / 2]``: the friction
term is at most ``-lambda s . u' / 2 <= 0`` under (2), whatever ``mu``, ``v_s`` and ``h``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.lie import perpendicular_basis, skew

#: Relative tolerance of the impulse solver's events (stick, end of compression, restitution).
_EVENT_RTOL = 1e-13
#: Normal-impulse steps per estimated total impulse while sliding.
_SLIDE_STEPS = 200
#: Largest RK4 step of a turning slide relative to ``|u_t| / (mu lambda_max(W_tt) + |g|)``,
#: ``g = du_t/dp``: near zero slip the direction equation is stiff (rate
#: ``mu s_perp^T W_tt s_perp / |u_t|``); 0.1 gave <= 5e-9 against a converged integration.
_TURN_STEP = 0.1
#: A slide is a straight line where its direction is off a fixed ray by less than this [rad].
_STEADY_RTOL = 1e-9
#: Largest friction coefficient of the laws and :func:`solve_impact`: real ones are below ~10,
#: and 1e6 already sticks whenever sticking can hold; near 1e308 the impulse overflows (NaN).
MAX_FRICTION = 1e6
#: Largest :attr:`ImpactLaw.tolerance` [m]: bodies count as touching within it, so a larger
#: one makes them bounce visibly apart without touching.
MAX_TOLERANCE = 1e-2
#: Largest :attr:`CompliantLaw.stiffness` [N/m]: the explicit spring is stable while
#: ``sqrt(k n^T W n) dt < 1``, which 1e9 N/m keeps for a 1 g body (``n^T W n = 1e3 / kg``) at
#: the smallest step, 1e-6 s; a stiffer contact is a rigid one (:class:`ImpactLaw`).
MAX_STIFFNESS = 1e9
#: Largest :attr:`CompliantLaw.damping` [N s/m]: the explicit damper is stable while
#: ``c n^T W n dt < 2``, which 1e9 N s/m keeps for a 1 t body (``n^T W n = 1e-3 / kg``) at the
#: smallest step, 1e-6 s.
MAX_DAMPING = 1e9


#: Tolerance on ``|n| = 1`` of the contact normals [-] (a computed normal is unit to
#: round-off; one that is not is a caller's error, which would scale the impulse).
_UNIT_RTOL = 1e-6
#: Relative tolerance of :func:`solve_impact`'s check that ``W`` is symmetric positive
#: semi-definite (round-off of ``J H^-1 J^T``), relative to its largest entry.
_PSD_RTOL = 1e-9


def _real(value: object, where: str) -> float:
    """``value`` as a float: a real number (Python or NumPy), not a string or a bool.

    Raises
    ------
    TypeError
        ``'<where>: expected a real number, got <type> <value>'``.
    """
    if not isinstance(value, (bool, np.bool_, str, bytes)):
        try:
            return float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    raise TypeError(f'{where}: expected a real number, got {type(value).__name__} {value!r}')


def _vector3(value: object, where: str) -> np.ndarray:
    """``value`` as a finite (3,) float array.

    Raises
    ------
    ValueError
        Naming ``where``: a shape other than (3,), or a value that is not finite.
    """
    x = np.asarray(value, dtype=float)
    if x.shape != (3,):
        raise ValueError(f'{where}: expected a (3,) vector, got shape {x.shape}')
    if not np.isfinite(x).all():
        i = int(np.flatnonzero(~np.isfinite(x))[0])
        raise ValueError(f'{where}: expected finite values, got {x[i]} at index {i}')
    return x


def _unit_normal(value: object, where: str) -> np.ndarray:
    """``value`` as a finite (3,) unit vector (``|n| = 1`` within :data:`_UNIT_RTOL`).

    Raises
    ------
    ValueError
        Naming ``where``: wrong shape, not finite, zero, or not of unit length.
    """
    n = _vector3(value, where)
    norm = float(np.linalg.norm(n))
    if not abs(norm - 1.0) <= _UNIT_RTOL:
        what = 'a zero vector' if norm == 0.0 else f'|n| = {norm:.9g}'
        raise ValueError(
            f'{where}: expected a unit normal (|n| = 1 within {_UNIT_RTOL:g}), got {what}'
        )
    return n


def _friction_coefficient(value: float, where: str) -> float:
    """A friction coefficient in [0, :data:`MAX_FRICTION`]."""
    mu = _real(value, where)
    if not (np.isfinite(mu) and 0.0 <= mu <= MAX_FRICTION):
        raise ValueError(
            f'{where}: expected a finite value in [0, {MAX_FRICTION:g}] (real coefficients are '
            f'below ~10, {MAX_FRICTION:g} already sticks whenever sticking can hold, and near '
            f'1e308 the impulse overflows), got {value!r}'
        )
    return mu


def point_jacobian(model: D.Model, q: np.ndarray, link: str, point: np.ndarray) -> np.ndarray:
    """(3, nv) Jacobian of the velocity of the material point at ``point`` (world, [m])
    fixed on ``link``'s body: ``v_p = J v`` [S0 eqs. 4-5].

    Parameters
    ----------
    model : Model
    q : (nq,) configuration ``[r0, Q0, phi]`` (base in the world frame) [m, -, rad | m].
    link : str
        A link on the body carrying the point.
    point : (3,) the point, world frame [m].

    Returns
    -------
    (3, nv) ndarray
        World-frame velocity of the point per unit of ``v`` [m/s per unit of ``v``].
    """
    J = D.link_jacobian(model, q, link)
    origin = D.link_pose(model, q, link)[0]
    # v_p = v_o + w x (p - o) = v_o - (p - o) x w
    return J[:3] - skew(np.asarray(point, dtype=float) - origin) @ J[3:]


def contact_jacobian(model: D.Model, q: np.ndarray, link: str, point: np.ndarray) -> np.ndarray:
    """(6, nv) rows ``[v_p; w]`` of ``link``'s body at ``point`` (world): the twist a weld
    at ``point`` constrains.

    Parameters
    ----------
    model : Model
    q : (nq,) configuration ``[r0, Q0, phi]`` (base in the world frame) [m, -, rad | m].
    link : str
        A link on the body.
    point : (3,) the reference point of the twist, world frame [m].

    Returns
    -------
    (6, nv) ndarray
        World-frame ``[v_p; w]`` per unit of ``v``.
    """
    J = D.link_jacobian(model, q, link)
    origin = D.link_pose(model, q, link)[0]
    J[:3] -= skew(np.asarray(point, dtype=float) - origin) @ J[3:]
    return J


def inverse_inertia(
    model: D.Model, q: np.ndarray, link: str, point: np.ndarray, *, angular: bool = False
) -> np.ndarray:
    """Yoshida's extended inversed inertia tensor ``J H^-1 J^T`` at a point of ``link``.

    Parameters
    ----------
    model : Model
    q : (nq,) configuration ``[r0, Q0, phi]`` (base in the world frame) [m, -, rad | m].
    link : str
        A link on the body the point is fixed in.
    point : (3,) world [m].
    angular : bool
        False: (3, 3), the velocity change of the point per unit impulse there [1/kg];
        True: (6, 6) with the rows of :func:`contact_jacobian` (impulse and angular impulse).

    Returns
    -------
    (3, 3) or (6, 6) ndarray
        World frame [1/kg]; the (6, 6) blocks ``[[1/kg, 1/(kg m)], [1/(kg m), 1/(kg m^2)]]``.
    """
    J = (contact_jacobian if angular else point_jacobian)(model, q, link, point)
    H = D.mass_matrix(model, q)
    return J @ np.linalg.solve(H, J.T)


@dataclass(frozen=True)
class ImpactLaw:
    """Rigid impact: Stronge's energetic ``restitution`` in [0, 1] and Coulomb ``friction``
    in [0, :data:`MAX_FRICTION`]; contacts closer than ``tolerance`` [m], in
    (0, :data:`MAX_TOLERANCE`], count as touching."""

    restitution: float = 0.5
    friction: float = 0.0
    tolerance: float = 1e-6

    def __post_init__(self) -> None:
        e, tol = _real(self.restitution, 'restitution'), _real(self.tolerance, 'tolerance')
        if not 0.0 <= e <= 1.0:
            raise ValueError(f'restitution: expected a value in [0, 1], got {self.restitution!r}')
        mu = _friction_coefficient(self.friction, 'friction')
        if not (np.isfinite(tol) and 0.0 < tol <= MAX_TOLERANCE):
            raise ValueError(
                f'tolerance: expected a finite value in (0, {MAX_TOLERANCE:g}] m (bodies within '
                f'it count as touching: a larger one bounces them apart visibly before they '
                f'touch), got {self.tolerance!r}'
            )
        # the converted values are stored (a NumPy scalar becomes a float)
        object.__setattr__(self, 'restitution', e)
        object.__setattr__(self, 'friction', mu)
        object.__setattr__(self, 'tolerance', tol)


@dataclass(frozen=True)
class CompliantLaw:
    """Spring-damper contact: ``stiffness`` [N/m] in (0, :data:`MAX_STIFFNESS`], ``damping``
    [N s/m] in [0, :data:`MAX_DAMPING`], Coulomb ``friction`` in [0, :data:`MAX_FRICTION`]
    regularized below ``stiction_speed`` [m/s] (module docstring).

    Explicit in time: the normal spring is stable while ``sqrt(stiffness n^T W n) dt`` is well
    under 1 (and the damper while ``damping n^T W n dt`` is), ``W`` the inverse inertia at the
    contact (:func:`inverse_inertia`), e.g. up to ~1e6 N/m at 1 ms for kg-scale bodies; a
    stiffer law gains energy (use :class:`ImpactLaw`). Friction needs no such condition when
    the scene passes ``W`` to :meth:`impulse`: its impulse is limited to the sticking one.
    """

    stiffness: float
    damping: float = 0.0
    friction: float = 0.0
    stiction_speed: float = 1e-3

    def __post_init__(self) -> None:
        k, c = _real(self.stiffness, 'stiffness'), _real(self.damping, 'damping')
        v_s = _real(self.stiction_speed, 'stiction_speed')
        if not (np.isfinite(k) and 0.0 < k <= MAX_STIFFNESS):
            raise ValueError(
                f'stiffness: expected a finite value in (0, {MAX_STIFFNESS:g}] N/m (the explicit '
                f'spring needs sqrt(stiffness n^T W n) dt < 1: {MAX_STIFFNESS:g} N/m is the limit '
                'for a 1 g body at the smallest step, 1e-6 s; a stiffer contact is rigid: '
                f'ImpactLaw), got {self.stiffness!r}'
            )
        if not (np.isfinite(c) and 0.0 <= c <= MAX_DAMPING):
            raise ValueError(
                f'damping: expected a finite value in [0, {MAX_DAMPING:g}] N s/m (the explicit '
                f'damper needs damping n^T W n dt < 2: {MAX_DAMPING:g} N s/m is the limit for a '
                f'1 t body at the smallest step, 1e-6 s), got {self.damping!r}'
            )
        mu = _friction_coefficient(self.friction, 'friction')
        if not (np.isfinite(v_s) and v_s > 0.0):
            raise ValueError(
                f'stiction_speed: expected a finite value > 0, got {self.stiction_speed!r}'
            )
        # the converted values are stored (a NumPy scalar becomes a float)
        for name, value in (
            ('stiffness', k),
            ('damping', c),
            ('friction', mu),
            ('stiction_speed', v_s),
        ):
            object.__setattr__(self, name, value)

    @staticmethod
    def _inputs(
        where: str, depth: float, u: np.ndarray, n: np.ndarray
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """``depth``, ``u``, ``n`` checked: finite, (3,) vectors, ``n`` of unit length.

        Raises
        ------
        TypeError, ValueError
            Naming the argument (``'<where>: depth: ...'``, ``u``, ``n``).
        """
        d = _real(depth, f'{where}: depth')
        if not np.isfinite(d):
            raise ValueError(f'{where}: depth: expected a finite depth [m], got {d!r}')
        return d, _vector3(u, f'{where}: u'), _unit_normal(n, f'{where}: n')

    def _normal(self, depth: float, u: np.ndarray, n: np.ndarray) -> tuple[float, np.ndarray]:
        """``F_n`` [N] (>= 0) and the tangential relative velocity ``u_t`` (3,) [m/s]."""
        un = float(n @ u)
        ut = u - un * n
        ut = ut - float(n @ ut) * n  # twice: with u nearly along n, once leaves round-off on n
        return max(0.0, self.stiffness * depth - self.damping * un), ut

    def force(self, depth: float, u: np.ndarray, n: np.ndarray) -> np.ndarray:
        """(3,) contact force on ``a`` [N] for a penetration ``depth`` >= 0 [m] and relative
        velocity ``u`` (3,) [m/s]; zero when the spring-damper would pull.

        The force of the module docstring, friction unlimited: ``force(...) * h`` is
        :meth:`impulse` without ``W`` (kept for compatibility; the scene steps with
        :meth:`impulse`).

        Parameters
        ----------
        depth : float
            Penetration depth [m].
        u : (3,) relative velocity ``a`` minus ``b`` at the contact, world [m/s].
        n : (3,) unit normal from ``b`` into ``a``, world [-].

        Returns
        -------
        (3,) ndarray
            World frame [N].

        Raises
        ------
        ValueError
            As :meth:`impulse` for ``depth``, ``u`` and ``n``.
        """
        depth, u, n = self._inputs('force', depth, u, n)
        fn, ut = self._normal(depth, u, n)
        if fn == 0.0:
            return np.zeros(3)
        speed = float(np.linalg.norm(ut))
        return fn * n - self.friction * fn * ut / max(speed, self.stiction_speed)

    def impulse(
        self,
        depth: float,
        u: np.ndarray,
        n: np.ndarray,
        h: float,
        W: np.ndarray | None = None,
    ) -> np.ndarray:
        """(3,) contact impulse on ``a`` [N s] over ``h`` [s] (``-impulse`` on ``b``), world.

        The normal part is ``F_n h n``; the friction part ``-lambda s`` (``s = u_t / |u_t|``),
        ``lambda = mu F_n h min(|u_t|, v_s) / v_s`` the force's, limited by ``W`` to the
        sticking impulse along ``s``, formula (2) of the module docstring: friction then
        never reverses the slip along ``s`` and never adds kinetic energy.

        Parameters
        ----------
        depth : float
            Penetration depth [m], finite (>= 0 in contact; a negative one is a gap).
        u : (3,) relative velocity ``a`` minus ``b`` at the contact [m/s], world, finite.
        n : (3,) unit normal from ``b`` into ``a``, world: finite, ``|n| = 1`` within 1e-6.
        h : float
            Duration of the impulse, >= 0 [s] (the scene's half step).
        W : (3, 3) inverse inertia at the contact [1/kg], world, optional
            ``J_a H_a^-1 J_a^T + J_b H_b^-1 J_b^T`` (formula (1) of the module docstring).
            None: the friction is not limited (``force(depth, u, n) * h``).

        Returns
        -------
        (3,) ndarray
            Zero when the spring-damper would pull.

        Raises
        ------
        ValueError
            ``h`` negative or not finite, ``W`` not a finite (3, 3) matrix; ``depth`` or ``u``
            not finite, ``u`` or ``n`` not of shape (3,), ``n`` not finite or not of unit
            length (a zero normal said so), each named.
        TypeError
            ``depth`` or ``h`` not a real number.
        """
        depth, u, n = self._inputs('impulse', depth, u, n)
        h = _real(h, 'impulse: h')
        if not (np.isfinite(h) and h >= 0.0):
            raise ValueError(f'impulse: h: expected a finite duration >= 0 s, got {h!r}')
        if W is None:
            return self.force(depth, u, n) * h
        W = np.asarray(W, dtype=float)
        if W.shape != (3, 3):
            raise ValueError(f'impulse: W: expected a (3, 3) inverse inertia, got shape {W.shape}')
        if not np.all(np.isfinite(W)):
            raise ValueError(f'impulse: W: expected finite values [1/kg], got {W.tolist()}')
        fn, ut = self._normal(depth, u, n)
        if fn == 0.0:
            return np.zeros(3)
        p_n = fn * h
        speed = float(np.linalg.norm(ut))
        lam = self.friction * p_n * min(speed, self.stiction_speed) / self.stiction_speed
        if lam == 0.0 or speed == 0.0:
            return p_n * n
        s = ut / speed
        Ws = 0.5 * (W @ s + W.T @ s)
        w_ss = float(s @ Ws)
        # the slip along s once the normal impulse has acted: s . (u + p_n W n)
        slip = float(s @ u) + p_n * float(Ws @ n)
        lam = min(lam, max(slip, 0.0) / w_ss) if w_ss > 0.0 else 0.0
        return p_n * n - lam * s


@dataclass(frozen=True)
class ImpactSolution:
    """Result of :func:`solve_impact` (world frame).

    Attributes
    ----------
    impulse : (3,) impulse on ``a`` [N s] (``-impulse`` on ``b``).
    velocity_after : (3,) relative velocity ``u`` after the impact [m/s].
    energy_loss : float
        Kinetic energy dissipated, ``-(u0 . P + P^T W P / 2)`` >= 0 [J].
    compression_impulse : float
        Normal impulse at the end of compression [N s].
    sticking : bool
        Whether the contact ended the impact stuck (no slip).
    phases : tuple of str
        The sequence of ``'slide'`` / ``'stick'`` phases.
    """

    impulse: np.ndarray
    velocity_after: np.ndarray
    energy_loss: float
    compression_impulse: float
    sticking: bool
    phases: tuple[str, ...]


class _Impulse:
    """Routh's integration in the contact frame ``(n, t1, t2)``: state ``u`` (3,), ``P``
    (3,) and the normal work ``E = int u_n dp``."""

    def __init__(self, Wc: np.ndarray, u: np.ndarray, mu: float) -> None:
        self.W = Wc
        self.mu = mu
        self.u = u.copy()
        self.P = np.zeros(3)
        self.E = 0.0
        self.scale = float(np.linalg.norm(u))
        self.tiny = 1e-12 * max(self.scale, 1e-300)
        self.wtt_max = float(np.linalg.eigvalsh(Wc[1:, 1:])[-1])

    def rate(self, u: np.ndarray, slip: np.ndarray | None) -> np.ndarray:
        """``dP/dp`` for sliding along ``slip`` (unit, tangent) or sticking (None)."""
        if slip is None:
            k = -np.linalg.solve(self.W[1:, 1:], self.W[1:, 0])
            return np.r_[1.0, k]
        return np.r_[1.0, -self.mu * slip]

    def stick_holds(self) -> bool:
        Wtt = self.W[1:, 1:]
        if np.linalg.cond(Wtt) > 1e12:
            return False
        k = np.linalg.solve(Wtt, self.W[1:, 0])
        return float(np.linalg.norm(k)) <= self.mu * (1.0 + 1e-12)

    def slip_direction(self) -> np.ndarray:
        """Direction ``s`` the slip starts in from rest: ``W_tn - mu W_tt s = lam s``,
        ``lam > 0`` (the tangential velocity grows along ``s``)."""
        ut = self.u[1:]
        if np.linalg.norm(ut) > self.tiny:
            return ut / np.linalg.norm(ut)
        Wtn, Wtt = self.W[1:, 0], self.W[1:, 1:]
        phi = np.linspace(0.0, 2 * np.pi, 721)
        s = np.stack((np.cos(phi), np.sin(phi)), axis=1)
        g = Wtn[None, :] - self.mu * s @ Wtt.T
        cross = s[:, 0] * g[:, 1] - s[:, 1] * g[:, 0]
        best, best_dot = s[0], -np.inf
        for i in range(phi.size - 1):
            if cross[i] == 0.0 or cross[i] * cross[i + 1] < 0.0:
                lo, hi = phi[i], phi[i + 1]
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    sm = np.array([np.cos(mid), np.sin(mid)])
                    gm = Wtn - self.mu * Wtt @ sm
                    cm = sm[0] * gm[1] - sm[1] * gm[0]
                    slo = np.array([np.cos(lo), np.sin(lo)])
                    glo = Wtn - self.mu * Wtt @ slo
                    if (slo[0] * glo[1] - slo[1] * glo[0]) * cm <= 0.0:
                        hi = mid
                    else:
                        lo = mid
                sm = np.array([np.cos(lo), np.sin(lo)])
                dot = float(sm @ (Wtn - self.mu * Wtt @ sm))
                if dot > best_dot:
                    best, best_dot = sm, dot
        return best

    def steady(self, dP: np.ndarray) -> bool:
        """Whether the slip ``u_t`` (not zero) is on a ray where it changes along itself at the
        rate ``dP`` (``g = du_t/dp``): its direction then stays fixed, the slide is a straight
        line. Its direction is off such a ray by about ``|g_perp| / (mu w_perp + |g|)``
        (``w_perp = s_perp^T W_tt s_perp``), which :data:`_STEADY_RTOL` bounds."""
        ut, g = self.u[1:], self.W[1:] @ dP
        s = ut / np.linalg.norm(ut)
        perp = np.array([-s[1], s[0]])
        w_perp = self.mu * float(perp @ self.W[1:, 1:] @ perp)
        return abs(float(perp @ g)) <= _STEADY_RTOL * (w_perp + float(np.linalg.norm(g)))

    def next_event(self, dP: np.ndarray, target: float | None, stop: bool) -> tuple[float, str]:
        """The normal impulse to the next event at the constant rate ``dP/dp = dP`` and the
        event: ``'compression'`` (its end, ``target`` None), ``'restitution'`` (``E = target``)
        or with ``stop`` ``'stop'`` (the slip at its least, zero on a straight line); an
        infinite impulse where none comes."""
        du = self.W @ dP
        h = _linear_event(self.u[0], float(du[0]), self.E, target)
        event = 'compression' if target is None else 'restitution'
        g = du[1:]
        gg = float(g @ g)
        if stop and gg > 0.0:
            h_stop = -float(self.u[1:] @ g) / gg
            if 0.0 <= h_stop < h:
                h, event = h_stop, 'stop'
        return h, event

    def advance(self, h: float, dP: np.ndarray) -> None:
        """Advance by ``h`` at the constant rate ``dP/dp = dP`` (exact)."""
        a = float(self.W[0] @ dP)
        self.E += self.u[0] * h + 0.5 * a * h * h
        self.P = self.P + h * dP
        self.u = self.u + h * (self.W @ dP)

    def rk4(self, h: float, slip0: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """One RK4 step of ``h`` while sliding (``slip0`` used where ``u_t`` vanishes)."""

        def f(u: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
            ut = u[1:]
            norm = np.linalg.norm(ut)
            s = ut / norm if norm > self.tiny else slip0
            dP = self.rate(u, s)
            return self.W @ dP, dP, float(u[0])

        u0, P0, E0 = self.u, self.P, self.E
        k1 = f(u0)
        k2 = f(u0 + 0.5 * h * k1[0])
        k3 = f(u0 + 0.5 * h * k2[0])
        k4 = f(u0 + h * k3[0])
        du = (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) / 6.0
        dP = (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]) / 6.0
        dE = (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2]) / 6.0
        return u0 + h * du, P0 + h * dP, E0 + h * dE


def _linear_event(u_n: float, a: float, E: float, target: float | None) -> float:
    """Normal impulse to the next event along a linear phase ``u_n(p) = u_n + a p``: the end
    of compression (``target`` None) or ``E(p) = target`` (restitution); ``inf`` if it does
    not come."""
    if target is None:
        return -u_n / a if a > 0.0 else np.inf
    # c + u_n p + a p^2 / 2 = 0 (c = E - target <= 0): its least root p >= 0, in forms that do
    # not cancel (-2 c / (u_n + r) is (-u_n + r) / a, r = sqrt(u_n^2 - 2 a c))
    c = E - target
    if c >= 0.0:
        return 0.0
    disc = u_n * u_n - 2.0 * a * c
    if disc < 0.0:
        return np.inf  # a < 0: u_n turns back before the work reaches the target
    r = np.sqrt(disc)
    if u_n >= 0.0:
        return -2.0 * c / (u_n + r) if u_n + r > 0.0 else np.inf
    return (-u_n + r) / a if a > 0.0 else np.inf


def solve_impact(
    W: np.ndarray, u: np.ndarray, n: np.ndarray, restitution: float, friction: float
) -> ImpactSolution:
    """The impulse of a rigid impact at one point (module docstring, [S0 eq. 41]).

    Parameters
    ----------
    W : (3, 3) inverse inertia at the contact, formula (1) of the module docstring, world
        frame [1/kg].
    u : (3,) relative velocity ``a`` minus ``b`` before the impact [m/s], world.
    n : (3,) normal from ``b`` into ``a``, world frame [-] (normalized here; not zero).
    restitution : float in [0, 1] (Stronge's energetic coefficient).
    friction : float in [0, :data:`MAX_FRICTION`] (Coulomb).

    Returns
    -------
    ImpactSolution
        Zero impulse when the bodies do not approach (``n . u >= 0``).

    Raises
    ------
    ValueError
        Naming the argument: ``W`` not a finite (3, 3) matrix or not symmetric positive
        semi-definite (within 1e-9 of its largest entry), ``u`` or ``n`` not a finite (3,)
        vector, a zero ``n``, ``restitution`` or ``friction`` out of range; an overflow of the
        impulse (``|u|`` too large for float64), said so.
    TypeError
        ``restitution`` or ``friction`` not a real number.
    """
    e = _real(restitution, 'solve_impact: restitution')
    if not 0.0 <= e <= 1.0:
        raise ValueError(f'solve_impact: restitution: expected a value in [0, 1], got {e}')
    mu = _friction_coefficient(friction, 'solve_impact: friction')
    n = _vector3(n, 'solve_impact: n')
    norm = float(np.linalg.norm(n))
    if not norm > 0.0 or not np.isfinite(norm):
        raise ValueError(f'solve_impact: n: expected a non-zero normal, got {n.tolist()}')
    n = n / norm
    u = _vector3(u, 'solve_impact: u')
    W = _inverse_inertia_3(W)
    t1, t2 = (x[0] for x in perpendicular_basis(n))
    B = np.vstack((n, t1, t2))
    Wc, uc = B @ W @ B.T, B @ u
    if uc[0] >= 0.0:
        return ImpactSolution(np.zeros(3), u.copy(), 0.0, 0.0, False, ())
    if not Wc[0, 0] > 0.0:
        raise ValueError(
            'solve_impact: W: expected a positive inverse inertia along the normal (a body that '
            f'can move), got n^T W n = {Wc[0, 0]:g}'
        )
    if mu == 0.0:
        p_c = -uc[0] / Wc[0, 0]
        P = np.array([(1.0 + e) * p_c, 0.0, 0.0])
        return _solution(B, Wc, uc, P, p_c, False, ('slide',))
    with np.errstate(over='ignore', invalid='ignore'):
        work = float(uc @ uc) / Wc[0, 0]  # the scale of the normal work, u^2 / W
    if not np.isfinite(work):
        raise _overflow(u, W)
    st = _Impulse(Wc, uc, mu)
    p_scale = -uc[0] / Wc[0, 0] + np.linalg.norm(uc[1:]) / max(mu * Wc[0, 0], 1e-300)
    h_max = p_scale / _SLIDE_STEPS
    p_c: float | None = None
    target: float | None = None  # E at the end of restitution
    slack = 0.0  # its tolerance (_end_compression)
    phases: list[str] = []
    sticking = False
    ray: np.ndarray | None = None  # the slip's direction once it restarted from rest
    for _ in range(100000):
        if p_c is not None and st.E >= target - slack:
            break
        slipping = np.linalg.norm(st.u[1:]) > st.tiny
        if ray is None and not slipping and st.stick_holds():
            if not phases or phases[-1] != 'stick':
                phases.append('stick')
            sticking = True
            st.u[1:] = 0.0
            dP = st.rate(st.u, None)
            st.advance(st.next_event(dP, target, False)[0], dP)
            st.u[1:] = 0.0
            if p_c is None:
                st.u[0] = 0.0
                p_c, target, slack = _end_compression(st, e)
            continue
        if not phases or phases[-1] != 'slide':
            phases.append('slide')
        sticking = False
        slip0 = st.slip_direction() if ray is None else ray
        dP = st.rate(st.u, slip0)
        rate = float(slip0 @ (Wc[1:] @ dP))
        if ray is None and not slipping and rate > 0.0:
            # restart from rest: the slip grows along the ray W_tn - mu W_tt s = rate s, where
            # its direction stays fixed to the end of the impact
            ray = slip0
        if ray is not None or (slipping and st.steady(dP)):
            # a straight line in u: exact to the next event
            h, event = st.next_event(dP, target, ray is None)
            if np.isfinite(h):
                st.advance(h, dP)
                if event == 'stop':
                    st.u[1:] = 0.0
                elif event == 'compression':
                    st.u[0] = 0.0
                    p_c, target, slack = _end_compression(st, e)
                continue
        h = h_max
        ut = st.u[1:]
        if slipping and rate < 0.0:
            # do not step past the end of the slip: shrink towards |u_t| = 0 (linear estimate)
            h = min(h, np.linalg.norm(ut) / -rate)
        if slipping and st.wtt_max > 0.0:
            # near zero slip its direction turns fast: the direction equation is stiff (rate
            # up to mu lambda_max(W_tt) / |u_t|), which explicit RK4 follows below that step
            g = float(np.linalg.norm(Wc[1:] @ dP))
            h = min(h, _TURN_STEP * np.linalg.norm(ut) / (mu * st.wtt_max + g))
        u1, P1, E1 = st.rk4(h, slip0)
        event = _crossed(st, u1, E1, p_c, target)
        if event is not None:
            h = _bisect(st, h, slip0, event, p_c, target)
            u1, P1, E1 = st.rk4(h, slip0)
        st.u, st.P, st.E = u1, P1, E1
        if slipping and np.linalg.norm(st.u[1:]) <= 1e-9 * st.scale and rate < 0.0:
            st.u[1:] = 0.0  # the slip stopped (within the step's estimate)
        if p_c is None and st.u[0] >= -_EVENT_RTOL * st.scale:
            st.u[0] = max(st.u[0], 0.0)
            p_c, target, slack = _end_compression(st, e)
        if not (np.isfinite(st.E) and np.isfinite(st.P).all() and np.isfinite(st.u).all()):
            raise _overflow(u, W)
    else:  # pragma: no cover - guarded by the step sizes
        raise RuntimeError('solve_impact: no convergence (degenerate inverse inertia?)')
    return _solution(B, Wc, uc, st.P, float(p_c), sticking, tuple(phases))


def _inverse_inertia_3(value: object) -> np.ndarray:
    """``W`` as a finite (3, 3) matrix, symmetrized, after checking that it is symmetric
    positive semi-definite within :data:`_PSD_RTOL` of its largest entry [1/kg].

    Raises
    ------
    ValueError
        ``'solve_impact: W: ...'``: wrong shape, not finite, not symmetric, or a negative
        eigenvalue (the eigenvalues are shown).
    """
    W = np.asarray(value, dtype=float)
    if W.shape != (3, 3):
        raise ValueError(
            f'solve_impact: W: expected a (3, 3) inverse inertia [1/kg], got shape {W.shape}'
        )
    if not np.isfinite(W).all():
        raise ValueError(f'solve_impact: W: expected finite values [1/kg], got {W.tolist()}')
    tol = _PSD_RTOL * float(np.max(np.abs(W)))
    asym = float(np.max(np.abs(W - W.T)))
    if asym > tol:
        raise ValueError(
            'solve_impact: W: expected a symmetric matrix (J H^-1 J^T), got W - W^T up to '
            f'{asym:.3g}'
        )
    W = 0.5 * (W + W.T)
    eig = np.linalg.eigvalsh(W)
    if eig[0] < -tol:
        raise ValueError(
            'solve_impact: W: expected a positive semi-definite inverse inertia (J H^-1 J^T), '
            f'got eigenvalues {eig.tolist()}'
        )
    return W


def _overflow(u: np.ndarray, W: np.ndarray) -> ValueError:
    """The error of an impulse that overflows float64 from finite ``u`` and ``W``."""
    return ValueError(
        'solve_impact: overflow: the impulse is not finite in float64 (max |u| = '
        f'{float(np.max(np.abs(u))):.3g} m/s, max |W| = {float(np.max(np.abs(W))):.3g} 1/kg): '
        'u too large'
    )


def _end_compression(st: _Impulse, e: float) -> tuple[float, float, float]:
    """At ``u_n = 0``: the compression impulse, the normal work that ends restitution and
    that end's tolerance, relative to the compression's work (the target is 0 at e = 1, which
    the work reaches only to round-off)."""
    work = -st.E  # energy absorbed in compression (> 0)
    target = -(1.0 - e * e) * work
    return float(st.P[0]), target, _EVENT_RTOL * max(work, abs(target)) + 1e-300


def _crossed(
    st: _Impulse, u1: np.ndarray, E1: float, p_c: float | None, target: float | None
) -> str | None:
    if p_c is None and u1[0] > 0.0:
        return 'compression'
    if p_c is not None and E1 > target:
        return 'restitution'
    return None


def _bisect(
    st: _Impulse, h: float, slip0: np.ndarray, event: str, p_c: float | None, t: float | None
) -> float:
    """The step ``h`` landing on ``event`` (bisection on the RK4 step as a function of h)."""
    lo, hi = 0.0, h
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        u1, _, E1 = st.rk4(mid, slip0)
        if _crossed(st, u1, E1, p_c, t) == event:
            hi = mid
        else:
            lo = mid
        if hi - lo <= _EVENT_RTOL * h:
            break
    return hi


def _solution(
    B: np.ndarray,
    Wc: np.ndarray,
    uc: np.ndarray,
    Pc: np.ndarray,
    p_c: float,
    sticking: bool,
    phases: tuple[str, ...],
) -> ImpactSolution:
    u_after = uc + Wc @ Pc
    loss = -float(uc @ Pc + 0.5 * Pc @ Wc @ Pc)
    return ImpactSolution(B.T @ Pc, B.T @ u_after, loss, p_c, sticking, phases)


__all__ = [
    'MAX_DAMPING',
    'MAX_FRICTION',
    'MAX_STIFFNESS',
    'MAX_TOLERANCE',
    'CompliantLaw',
    'ImpactLaw',
    'ImpactSolution',
    'contact_jacobian',
    'inverse_inertia',
    'point_jacobian',
    'solve_impact',
]
