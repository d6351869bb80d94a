"""The free-floating quantities of SPART / SpaceDyn and seed 000, in one place.

Glossary (inertial frame, SI units):

=============  ================================================================================
``H0``         base inertia matrix (6, 6) [S0 eq. 20]
``H0m``        base-manipulator coupling inertia (6, n) [S0 eq. 23]
``Hm``         manipulator inertia (n, n) (``H_phi``) [S0 eq. 24]
``c_b, c_m``   base and joint parts of the nonlinear effects ``c`` [S0 eq. 38]
``B``          ``H0^-1 H0m`` (6, n): under zero momentum the base moves with
               ``x0dot = -B phidot`` [S0 eq. 21] (not the control map ``B(q)`` of
               [S0 eq. 41]; its angular rows are the ``A`` of :mod:`ffsim_ros.control`)
``J*``         generalized Jacobian ``Jm - Js B`` (Yoshida & Umetani 1993)
``H*, c*``     generalized inertia ``Hm - H0m^T B`` and bias ``c_m - H0m^T H0^-1 c_b`` of the
               unactuated-base dynamics ``tau = H* phiddot + c*`` ([S0 eq. 39] with ``F_b = 0``)
=============  ================================================================================

:func:`free_floating_terms` computes them all from one evaluation of ``H``, ``c`` and a link
Jacobian (what a controller needs each cycle); the other functions are its single-purpose
views. Names the code gives other meanings than the seeds do (``B``, ``A``, ``H_b``, ``q``):
docs/equations.md, "Code names that differ from the seeds'".
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .algorithms import bias_forces, center_of_mass, mass_matrix
from .direct import DirectEntry
from .inputs import ArrayLike, as_q, as_vector, check_point, require_floating
from .kernels.generalized_jacobian import e_generalized_jacobian
from .lie import cross
from .link_frames import link_jacobian
from .model import Model
from .state_errors import require_finite_outputs

_GJ = DirectEntry(e_generalized_jacobian)


class FreeFloatingTerms(NamedTuple):
    """The free-floating terms at one state (see the module glossary); inertial frame."""

    H: np.ndarray  #: (nv, nv) generalized inertia matrix [S0 eqs. 24-27]
    c: np.ndarray  #: (nv,) nonlinear effects [S0 eq. 38]
    B: np.ndarray  #: (6, n) ``H0^-1 H0m`` [S0 eq. 21]
    J: np.ndarray | None  #: (6, nv) link Jacobian ``[Js | Jm]`` [S0 eq. 5] (None: no link)
    J_star: np.ndarray | None  #: (6, n) generalized Jacobian ``Jm - Js B`` (None: no link)
    H_star: np.ndarray  #: (n, n) generalized inertia ``Hm - H0m^T B``
    c_star: np.ndarray  #: (n,) ``c_m - H0m^T H0^-1 c_b``


def free_floating_terms(
    model: Model, q: ArrayLike, v: ArrayLike, link: str | None = None
) -> FreeFloatingTerms:
    """Every term of the module glossary at ``(q, v)``, the Jacobians for the link frame
    ``link`` (None: no Jacobians).

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) ndarray
        Configuration ``[r0, Q0 (x, y, z, w), phi]`` [m, -, rad | m].
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame [m/s, rad/s, rad/s | m/s].
    link : str, optional
        Link whose frame origin the Jacobians ``J``, ``J_star`` are for.

    Returns
    -------
    FreeFloatingTerms
        Inertial frame; base rows and columns ``[V0 (base CoM), w0]``.

    Raises
    ------
    ValueError
        A fixed-base model; :class:`~.model.UnknownNameError` for an unknown link.
    """
    require_floating(model, 'free_floating_terms')
    q = as_q(model, q)
    H = mass_matrix(model, q)
    c = bias_forces(model, q, v)
    n = model.n
    H0m = H[:6, 6:]
    X = np.linalg.solve(H[:6, :6], np.column_stack((H0m, c[:6])))
    B = X[:, :n]
    J = None if link is None else link_jacobian(model, q, link)
    return FreeFloatingTerms(
        H=H,
        c=c,
        B=B,
        J=J,
        J_star=None if J is None else J[:, 6:] - J[:, :6] @ B,
        H_star=H[6:, 6:] - H0m.T @ B,
        c_star=c[6:] - H0m.T @ X[:, n],
    )


def inertia_blocks(model: Model, q: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The free-floating blocks of the inertia matrix [S0 eqs. 20, 23, 24].

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) configuration ``[r0, Q0 (x, y, z, w), phi]``, base in the inertial frame
        [m, -, rad | m].

    Returns
    -------
    H0 : (6, 6) base inertia matrix [S0 eq. 20].
    H0m : (6, n) base-manipulator coupling inertia [S0 eq. 23]: ``[P; L0] = H0 x0dot + H0m
        phidot`` with ``L0`` the angular momentum about the base CoM [S0 eq. 21].
    Hm : (n, n) manipulator inertia (``H_phi``, [S0 eq. 24]).
    """
    require_floating(model, 'inertia_blocks')
    H = mass_matrix(model, as_q(model, q))  # one state (a batch gave wrongly cut blocks)
    return H[:6, :6], H[:6, 6:], H[6:, 6:]


def generalized_jacobian(model: Model, q: ArrayLike, link: str) -> np.ndarray:
    """Generalized Jacobian ``J* = Jm - Js H0^-1 H0m`` (Yoshida & Umetani 1993).

    Under zero total momentum ([S0 eq. 21] with ``[P; L] = 0``) the base velocity is
    ``x0dot = -H0^-1 H0m phidot``; substituting into [S0 eq. 5] gives ``[v; w] = J* phidot``.

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) configuration ``[r0, Q0 (x, y, z, w), phi]``, base in the inertial frame
        [m, -, rad | m].
    link : str
        The link whose frame origin ``v`` is the velocity of.

    Returns
    -------
    (6, n) ndarray, inertial frame, rows ``[linear velocity of the link origin; angular]``.
    """
    require_floating(model, 'generalized_jacobian')
    frame = model.frame(link)
    out = np.empty((6, model.n))
    # (one compiled pass: kinematics, the frame's Jacobian, CRBA, H0's Cholesky solve)
    _GJ.on_configuration(model, q, frame.body, frame.translation, out)
    return out


def generalized_inertia(model: Model, q: ArrayLike, v: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(H*, c*)`` of the unactuated-base dynamics ``tau = H* phiddot + c*``.

    ``H* = Hm - H0m^T H0^-1 H0m`` (Yoshida's generalized inertia), ``c* = c_m - H0m^T H0^-1
    c_b`` ([S0 eq. 39] with ``F_b = 0``).

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) ndarray
        Configuration ``[r0, Q0 (x, y, z, w), phi]`` [m, -, rad | m].
    v : (nv,) ndarray
        Velocity ``[V0, w0, phidot]``, base parts in the inertial frame [m/s, rad/s, rad/s | m/s].

    Returns
    -------
    H_star : (n, n) ndarray
        [kg m^2 | kg].
    c_star : (n,) ndarray
        [N m | N].
    """
    terms = free_floating_terms(model, q, v)
    return terms.H_star, terms.c_star


def base_velocity_from_momentum(
    model: Model,
    q: ArrayLike,
    phidot: ArrayLike,
    momentum: ArrayLike | None = None,
    *,
    about: str = 'origin',
) -> np.ndarray:
    """Base velocity ``x0dot = [V0; w0]`` implied by a total momentum [S0 eq. 21].

    ``x0dot = H0^-1 ([P; L0] - H0m phidot)`` with ``L0`` about the base CoM.

    Parameters
    ----------
    model : Model
        A floating-base model.
    q : (nq,) configuration ``[r0, Q0 (x, y, z, w), phi]``, base in the inertial frame
        [m, -, rad | m].
    phidot : (n,) joint rates [rad/s | m/s].
    momentum : (6,) array_like, optional
        ``[P; L]`` (inertial frame) with ``L`` about ``about`` [kg m/s, kg m^2/s]; default
        zero.
    about : {'origin', 'com', 'base'}
        Reference point of ``L``: the inertial origin, the system CoM or the base CoM.

    Returns
    -------
    (6,) ndarray ``[V0; w0]``: base CoM velocity and base angular velocity, inertial frame
        [m/s, rad/s].

    Raises
    ------
    ValueError
        A fixed-base model, wrong sizes, an unknown ``about``; a non-finite argument, named.
    """
    require_floating(model, 'base_velocity_from_momentum')
    check_point(about)
    q = as_q(model, q)
    phidot = as_vector(phidot, model.n, 'phidot')
    given = np.zeros(6) if momentum is None else as_vector(momentum, 6, 'momentum')
    h = given.copy()
    if about != 'base':
        point = np.zeros(3) if about == 'origin' else center_of_mass(model, q)
        # L_point -> L_O -> L_0 [S0 eqs. 12, 17]
        h[3:] += cross(point - q[:3], h[:3])
    H = mass_matrix(model, q)
    out = np.linalg.solve(H[:6, :6], h - H[:6, 6:] @ phidot)
    require_finite_outputs(model, (out,), q=q, phidot=phidot, momentum=given)
    return out
