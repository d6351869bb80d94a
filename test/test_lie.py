"""The rotation / Lie-group module ``ffsim_ros.dynamics.lie`` against an independent library,
``scipy.spatial.transform.Rotation`` (quaternions ``(x, y, z, w)`` as well, Hamilton product,
active rotations), and against finite differences for the chart rate.

The hard cases are covered on purpose: angles at and just below ``pi`` (where ``log`` is
ill-conditioned through the matrix trace and the quaternion sign is free), tiny angles (the
series branches, and their boundaries), non-unit and negative-``w`` quaternions, and each
branch of Shepperd's matrix-to-quaternion method.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from ffsim_ros.dynamics import lie

PI = np.pi
#: angles [rad] through every branch: 0, the series of exp (< 1e-8) and of the chart rate
#: (< 1e-4) and their boundaries, ordinary angles, and up to pi
ANGLES = (
    0.0,
    1e-12,
    1e-9,
    lie.SMALL_ANGLE * (1 - 1e-6),
    lie.SMALL_ANGLE * (1 + 1e-6),
    1e-6,
    1e-4 * (1 - 1e-6),
    1e-4 * (1 + 1e-6),
    0.3,
    1.0,
    2.5,
    3.0,
    PI - 1e-6,
    PI - 1e-9,
)


def unit(v) -> np.ndarray:
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def axes(rng: np.random.Generator, count: int = 3) -> list[np.ndarray]:
    """Random unit axes and the coordinate axes (with a negative one)."""
    return [unit(rng.normal(size=3)) for _ in range(count)] + [
        np.array([1.0, 0.0, 0.0]),
        np.array([0.0, -1.0, 0.0]),
        np.array([0.0, 0.0, 1.0]),
    ]


def positive_w(q: np.ndarray) -> np.ndarray:
    return -q if q[3] < 0 else q


def assert_same_rotation_quat(got, ref, atol: float = 1e-15) -> None:
    """``got == +-ref`` (a quaternion and its negative are one rotation)."""
    got, ref = np.asarray(got), np.asarray(ref)
    sign = 1.0 if got @ ref >= 0 else -1.0
    np.testing.assert_allclose(got, sign * ref, rtol=0, atol=atol)


# --------------------------------------------------------------------------------------------
# quaternion <-> matrix
# --------------------------------------------------------------------------------------------


def test_quat_to_matrix_matches_scipy_for_any_norm() -> None:
    rng = np.random.default_rng(1)
    for _ in range(100):
        q = rng.normal(size=4) * rng.uniform(0.01, 100.0)  # not unit: normalized by both
        np.testing.assert_allclose(
            lie.quat_to_matrix(q), Rotation.from_quat(q).as_matrix(), rtol=0, atol=2e-15
        )
    np.testing.assert_array_equal(lie.quat_to_matrix([0, 0, 0, 1]), np.eye(3))
    np.testing.assert_array_equal(lie.quat_to_matrix([0, 0, 0, -2]), np.eye(3))


@pytest.mark.parametrize('scale', [1e-8, 1e150, 1e160, 1e300])
def test_huge_and_tiny_quaternions_normalize_as_unit_ones(scale: float) -> None:
    """The squares of 1e160 overflow and those of 1e-160 are subnormal: both functions scale
    first (the kernels' ``qnormalize`` gave a norm of 1.0000056 at 1e-160, failed at 1e160)."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        u = unit(rng.normal(size=4))
        np.testing.assert_allclose(lie.quat_normalize(scale * u), u, rtol=0, atol=4e-16)
        np.testing.assert_allclose(
            lie.quat_to_matrix(scale * u), Rotation.from_quat(u).as_matrix(), rtol=0, atol=2e-15
        )
        for s in (scale, 1.0 / scale):  # the kernels' form takes any non-zero finite norm
            got = np.array(lie.qnormalize(tuple(s * u)))
            np.testing.assert_allclose(got, u, rtol=0, atol=4e-16)


def test_a_step_takes_a_base_quaternion_of_any_finite_norm() -> None:
    """The compiled step normalizes the base attitude as a unit quaternion's, however scaled."""
    from ffsim_ros import dynamics as D
    from ffsim_ros.resources import sample_robot

    model = D.load_urdf(sample_robot('ffsim_servicer_7dof'))
    rng = np.random.default_rng(3)
    q = D.neutral(model)
    q[3:7] = unit(rng.normal(size=4))
    q[7:] = rng.uniform(-1.0, 1.0, model.n)
    v = rng.normal(size=model.nv) * 0.1
    q_ref, v_ref = D.step(model, q, v, np.zeros(model.n), 1e-3)
    for scale in (1e-160, 1e-100, 1e100, 1e160, 1e300):
        qs = q.copy()
        qs[3:7] *= scale
        q1, v1 = D.step(model, qs, v, np.zeros(model.n), 1e-3)
        np.testing.assert_allclose(q1, q_ref, rtol=0, atol=2e-15)
        np.testing.assert_allclose(v1, v_ref, rtol=0, atol=2e-14)


def special_rotations(rng: np.random.Generator) -> list[Rotation]:
    """Rotations at pi and near it about many axes (each branch of Shepperd's method: the
    trace, and each diagonal element the largest), tiny ones, and random ones."""
    out = [Rotation.identity()]
    for axis in axes(rng, 4) + [unit([1, 1, 0]), unit([0, 1, -1]), unit([1, -1, 1])]:
        for angle in (1e-12, 1e-6, 1.0, 2.0, PI / 2, PI - 1e-6, PI - 1e-9, PI):
            out.append(Rotation.from_rotvec(angle * axis))
    return out + list(Rotation.random(50, random_state=rng))


def test_matrix_to_quat_matches_scipy_with_w_nonnegative() -> None:
    rng = np.random.default_rng(2)
    for rot in special_rotations(rng):
        R = rot.as_matrix()
        got = lie.matrix_to_quat(R)
        assert got[3] >= 0.0, got
        assert abs(np.linalg.norm(got) - 1.0) < 1e-15
        ref = rot.as_quat()
        if ref[3] != 0.0:  # w > 0 fixes the sign; at exactly pi both signs are w = 0
            np.testing.assert_allclose(got, positive_w(ref), rtol=0, atol=1e-15)
        else:
            assert_same_rotation_quat(got, ref)
        np.testing.assert_allclose(lie.quat_to_matrix(got), R, rtol=0, atol=2e-15)


def test_matrix_to_quat_branches_of_shepperds_method() -> None:
    """A rotation by pi about e_i has R_ii = 1 the largest diagonal element and trace -1: the
    quaternion is e_i exactly."""
    for i in range(3):
        e = np.eye(3)[i]
        R = 2.0 * np.outer(e, e) - np.eye(3)  # rotation by pi about e_i
        np.testing.assert_array_equal(lie.matrix_to_quat(R), np.r_[e, 0.0])


# --------------------------------------------------------------------------------------------
# product, exp, log, angle
# --------------------------------------------------------------------------------------------


def test_quat_multiply_is_hamiltons_product_and_the_composition() -> None:
    i, j, k, one = np.eye(4)
    np.testing.assert_array_equal(lie.quat_multiply(i, j), k)
    np.testing.assert_array_equal(lie.quat_multiply(j, i), -k)
    np.testing.assert_array_equal(lie.quat_multiply(k, k), -one)
    rng = np.random.default_rng(3)
    for _ in range(50):
        a, b = rng.normal(size=4), rng.normal(size=4)
        ab = lie.quat_multiply(a, b)
        # not normalized: |ab| = |a||b|
        assert abs(np.linalg.norm(ab) - np.linalg.norm(a) * np.linalg.norm(b)) < 1e-13 * (
            np.linalg.norm(a) * np.linalg.norm(b)
        )
        ref = Rotation.from_quat(a) * Rotation.from_quat(b)  # apply b, then a
        assert_same_rotation_quat(unit(ab), ref.as_quat(), atol=1e-15)
        np.testing.assert_allclose(
            lie.quat_to_matrix(ab),
            lie.quat_to_matrix(a) @ lie.quat_to_matrix(b),
            rtol=0,
            atol=2e-15,
        )
    np.testing.assert_array_equal(lie.quat_conjugate([1.0, -2.0, 3.0, 4.0]), [-1, 2, -3, 4])


@pytest.mark.parametrize('angle', ANGLES + (PI, 4.0, 2 * PI - 0.1))
def test_quat_exp_matches_scipy(angle: float) -> None:
    rng = np.random.default_rng(4)
    for axis in axes(rng):
        r = angle * axis
        got = lie.quat_exp(r)
        ref = Rotation.from_rotvec(r).as_quat()  # (sin(t/2) axis, cos(t/2)): the same sign
        np.testing.assert_allclose(got[:3], ref[:3], rtol=1e-14, atol=1e-15 * angle)
        np.testing.assert_allclose(got[3], ref[3], rtol=0, atol=1e-15)
        assert abs(np.linalg.norm(got) - 1.0) < 1e-15
        np.testing.assert_allclose(
            lie.matrix_exp(r), Rotation.from_rotvec(r).as_matrix(), rtol=0, atol=2e-15
        )


@pytest.mark.parametrize('angle', ANGLES)
def test_quat_log_matches_scipy_and_inverts_exp(angle: float) -> None:
    """``log`` of a rotation by ``angle < pi`` is its rotation vector (relative accuracy at
    tiny angles), whatever the quaternion's sign and norm."""
    rng = np.random.default_rng(5)
    for axis in axes(rng):
        r = angle * axis
        q = Rotation.from_rotvec(r).as_quat()
        for scale in (1.0, -1.0, 7.5, -1e-3):  # -q is the same rotation: the shorter angle
            got = lie.quat_log(scale * q)
            np.testing.assert_allclose(got, r, rtol=1e-14, atol=1e-15 * angle)
        np.testing.assert_allclose(
            lie.quat_log(q), Rotation.from_quat(q).as_rotvec(), rtol=1e-13, atol=1e-15 * angle
        )
        np.testing.assert_allclose(lie.quat_log(lie.quat_exp(r)), r, rtol=1e-14, atol=0)


def test_log_at_pi_gives_a_rotation_vector_of_length_pi() -> None:
    """At exactly pi the sign of the rotation vector is free; both maps return one of the two,
    of length pi, whose exponential is the rotation."""
    rng = np.random.default_rng(6)
    for axis in axes(rng) + [unit([1, 1, 0]), unit([1, -1, 1])]:
        R = Rotation.from_rotvec(PI * axis).as_matrix()
        for got in (
            lie.matrix_log(R),
            lie.quat_log(np.r_[axis, 0.0]),
            lie.quat_log(np.r_[-axis, 0.0]),
        ):
            assert abs(np.linalg.norm(got) - PI) < 1e-14
            assert abs(abs(got @ axis) - PI) < 1e-14  # along the axis, either way
            np.testing.assert_allclose(lie.matrix_exp(got), R, rtol=0, atol=2e-15)


@pytest.mark.parametrize('angle', ANGLES)
def test_matrix_log_matches_scipy_near_pi(angle: float) -> None:
    """Through the quaternion, the matrix log keeps full accuracy up to pi (the trace formula
    ``acos((tr R - 1) / 2)`` loses half the digits there)."""
    rng = np.random.default_rng(7)
    for axis in axes(rng):
        r = angle * axis
        R = Rotation.from_rotvec(r).as_matrix()
        got = lie.matrix_log(R)
        np.testing.assert_allclose(got, r, rtol=0, atol=2e-15 * max(1.0, angle))
        np.testing.assert_allclose(
            got, Rotation.from_matrix(R).as_rotvec(), rtol=0, atol=2e-15 * max(1.0, angle)
        )
        np.testing.assert_allclose(lie.matrix_log(lie.matrix_exp(r)), r, rtol=0, atol=1e-14)


def test_quat_angle_matches_scipy() -> None:
    rng = np.random.default_rng(8)
    for _ in range(50):
        a, b = rng.normal(size=4), rng.normal(size=4)  # any norm, any sign
        ref = (Rotation.from_quat(b) * Rotation.from_quat(a).inv()).magnitude()
        assert lie.quat_angle(a, b) == pytest.approx(ref, abs=1e-14)
        assert lie.quat_angle(b, a) == pytest.approx(ref, abs=1e-14)
        assert lie.quat_angle(a, -3.0 * a) == pytest.approx(0.0, abs=1e-15)  # same attitude
    for angle in (1e-9, 1.0, PI - 1e-9, PI):
        q = Rotation.from_rotvec(angle * unit([1, 2, 3])).as_quat()
        assert lie.quat_angle([0, 0, 0, 1], q) == pytest.approx(angle, rel=1e-14, abs=1e-15)


# --------------------------------------------------------------------------------------------
# skew, cross, perpendicular basis, URDF rpy
# --------------------------------------------------------------------------------------------


def test_skew_and_cross_are_the_cross_product() -> None:
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    S = lie.skew(x)
    assert S.shape == (5, 3, 3)
    np.testing.assert_allclose(S @ y[:, :, None], np.cross(x, y)[:, :, None], atol=1e-15)
    np.testing.assert_array_equal(S, -np.swapaxes(S, 1, 2))
    np.testing.assert_array_equal(lie.skew(x[0]), S[0])
    a, b = rng.normal(size=(4, 1, 3)), rng.normal(size=(6, 3))  # broadcast to (4, 6, 3)
    np.testing.assert_allclose(lie.cross(a, b), np.cross(a, b), rtol=0, atol=1e-15)
    for bad in (np.zeros(2), np.float64(1.0), np.zeros((3, 2))):
        with pytest.raises(ValueError, match='expected 3 values in the last axis'):
            lie.skew(bad)


def test_perpendicular_basis_is_orthonormal_and_right_handed() -> None:
    rng = np.random.default_rng(10)
    k = rng.normal(size=(100, 3))
    k = np.concatenate((k / np.linalg.norm(k, axis=1, keepdims=True), np.eye(3), -np.eye(3)))
    q1, q2 = lie.perpendicular_basis(k)
    for u in (q1, q2):
        np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=0, atol=1e-15)
    for u, w in ((q1, q2), (q1, k), (q2, k)):
        assert np.abs(np.einsum('ij,ij->i', u, w)).max() < 1e-15
    np.testing.assert_allclose(np.cross(q1, q2), k, rtol=0, atol=1e-15)  # (q1, q2, k)
    assert np.linalg.det(np.stack((q1, q2, k), axis=2)).min() > 1.0 - 1e-14
    s1, s2 = lie.perpendicular_basis(k[0])  # a single (3,) axis
    np.testing.assert_array_equal(s1, q1[:1])
    np.testing.assert_array_equal(s2, q2[:1])


def test_rpy_to_matrix_is_urdfs_fixed_axes_xyz() -> None:
    """URDF's ``rpy``: roll about the fixed x, then pitch about the fixed y, then yaw about
    the fixed z, i.e. scipy's extrinsic ``'xyz'`` (lower case)."""
    rng = np.random.default_rng(11)
    cases = [rng.uniform(-PI, PI, 3) for _ in range(50)]
    cases += [np.array([0.3, PI / 2, -1.1]), np.array([0.3, -PI / 2, 2.0]), np.zeros(3)]
    for rpy in cases:
        got = lie.rpy_to_matrix(rpy)
        np.testing.assert_allclose(
            got, Rotation.from_euler('xyz', rpy).as_matrix(), rtol=0, atol=2e-15
        )
        Rx, Ry, Rz = (lie.matrix_exp(a * e) for a, e in zip(rpy, np.eye(3), strict=True))
        np.testing.assert_allclose(got, Rz @ Ry @ Rx, rtol=0, atol=2e-15)
    with pytest.raises(ValueError, match=r'rpy: expected 3 values, got shape \(2,\)'):
        lie.rpy_to_matrix([0.0, 1.0])


# --------------------------------------------------------------------------------------------
# the chart rate of RK4 on SO(3)
# --------------------------------------------------------------------------------------------


def chart_coordinates(theta: np.ndarray, w: np.ndarray, h: float, half: float) -> np.ndarray:
    """Exponential coordinates after turning for ``h`` seconds at ``w`` (scipy's exp, log):
    ``log(exp(h w) exp(theta))`` (inertial ``w``, ``half < 0``) or ``log(exp(theta) exp(h w))``
    (body-frame ``w``)."""
    step, here = Rotation.from_rotvec(h * w), Rotation.from_rotvec(theta)
    return (step * here if half < 0 else here * step).as_rotvec()


@pytest.mark.parametrize('half', [-0.5, 0.5], ids=['base-left', 'ball-right'])
@pytest.mark.parametrize('angle', (0.0, 1e-6, 1e-4 * (1 - 1e-6), 1e-4 * (1 + 1e-6), 0.5, 2.0, 3.0))
def test_so3_chart_rate_is_the_rate_of_the_exponential_coordinates(angle: float, half: float):
    """With ``R = exp(theta) R_ref`` turning at the inertial ``w`` (``half = -0.5``: a floating
    base) ``theta(t + h) = log(exp(h w) exp(theta))``; with ``R = R_ref exp(theta)`` turning at
    the body-frame ``w`` (``half = +0.5``: a ball joint) ``theta(t + h) = log(exp(theta)
    exp(h w))``. Central differences of that (scipy's exp and log) give the rate."""
    rng = np.random.default_rng(12)
    for _ in range(4):
        theta = angle * unit(rng.normal(size=3))
        w = rng.normal(size=3)
        got = np.array(lie.so3_chart_rate(*theta, *w, half))

        h = 1e-6
        fd = (chart_coordinates(theta, w, h, half) - chart_coordinates(theta, w, -h, half)) / (
            2 * h
        )
        np.testing.assert_allclose(got, fd, rtol=0, atol=2e-9 * np.linalg.norm(w))
        if angle == 0.0:
            np.testing.assert_array_equal(got, w)


def test_so3_chart_rate_is_continuous_at_its_series_boundary() -> None:
    rng = np.random.default_rng(13)
    axis, w = unit(rng.normal(size=3)), rng.normal(size=3)
    for half in (-0.5, 0.5):
        below = np.array(lie.so3_chart_rate(*(1e-4 * (1 - 1e-12) * axis), *w, half))
        above = np.array(lie.so3_chart_rate(*(1e-4 * (1 + 1e-12) * axis), *w, half))
        np.testing.assert_allclose(below, above, rtol=0, atol=1e-15 * np.linalg.norm(w))


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    'bad', [[0.0, 0.0, 0.0, 0.0], [np.nan, 0.0, 0.0, 1.0], [0.0, np.inf, 0.0, 1.0], [1e-12] * 4]
)
def test_zero_or_non_finite_quaternions_are_errors_naming_the_argument(bad) -> None:
    with pytest.raises(ValueError, match=r'base attitude: expected a non-zero finite quaternion'):
        lie.quat_normalize(bad, 'base attitude')
    for f in (lie.quat_to_matrix, lie.quat_log):
        with pytest.raises(ValueError, match=r'quaternion: expected a non-zero finite .* got \['):
            f(bad)


def test_wrong_sizes_are_errors_naming_the_argument() -> None:
    with pytest.raises(ValueError, match=r'quaternion: expected 4 values, got shape \(3,\)'):
        lie.quat_to_matrix([0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r'^a: expected 4 values, got shape \(5,\)'):
        lie.quat_multiply(np.ones(5), np.ones(4))
    with pytest.raises(ValueError, match=r'^b: expected 4 values, got shape \(2, 2\)'):
        lie.quat_multiply(np.ones(4), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r'rotation vector: expected 3 values, got shape \(4,\)'):
        lie.quat_exp(np.ones(4))
    with pytest.raises(ValueError, match=r'rotation vector: expected 3 values'):
        lie.matrix_exp(np.ones(2))


@pytest.mark.parametrize('which', ['a', 'b'])
def test_quat_angle_errors_name_the_bad_argument(which: str) -> None:
    good, bad = [0.0, 0.0, 0.0, 1.0], [np.nan, 0.0, 0.0, 1.0]
    args = (bad, good) if which == 'a' else (good, bad)
    with pytest.raises(ValueError, match=rf'^{which}: expected a non-zero finite .*nan'):
        lie.quat_angle(*args)


def test_quat_rotate_inverse_matches_scipy() -> None:
    """``R(quat)^T vec`` in plain floats (the base twist the simulator publishes) against
    scipy's inverse rotation, for random unit quaternions (both signs of ``w``), every angle
    of :data:`ANGLES` and vectors over twelve orders of magnitude."""
    rng = np.random.default_rng(11)
    quats = [unit(rng.normal(size=4)) for _ in range(20)]
    quats += [Rotation.from_rotvec(angle * a).as_quat() for a in axes(rng) for angle in ANGLES]
    for quat in quats:
        for scale in (1e-6, 1.0, 1e6):
            vec = rng.normal(size=3) * scale
            got = lie.quat_rotate_inverse(tuple(quat), tuple(vec))
            expected = Rotation.from_quat(quat).inv().apply(vec)
            assert np.allclose(got, expected, rtol=0.0, atol=1e-15 * np.linalg.norm(vec) * 4)
            assert all(isinstance(x, float) for x in got)


def test_is_rotation_refuses_reflections_and_other_shapes() -> None:
    from ffsim_ros.dynamics.lie import is_rotation, matrix_exp

    R = matrix_exp([0.3, -1.2, 0.5])
    assert is_rotation(R)
    assert not is_rotation(R @ np.diag([1.0, 1.0, -1.0]))  # orthogonal, det -1
    assert not is_rotation(1.01 * R)
    assert not is_rotation(np.eye(2))
    assert not is_rotation(R + np.diag([1e-8, 0.0, 0.0]))  # (|R R^T - E| 2e-8 > 1e-9)
    assert not is_rotation(np.full((3, 3), np.nan)) and not is_rotation(np.diag([np.inf, 1, 1]))


def test_are_rotations_of_stacked_matrices_against_scipy() -> None:
    """The stacked form: scipy's rotations (random, and through every angle of
    :data:`ANGLES`) are rotations, the same mirrored (orthogonal, det -1) are not, nor scaled,
    skewed or non-finite ones; a (..., 3, 3) stack gives a (...) mask, equal to
    :func:`is_rotation` matrix by matrix."""
    rng = np.random.default_rng(17)
    rots = list(Rotation.random(40, random_state=5).as_matrix())
    rots += [Rotation.from_rotvec(t * a).as_matrix() for a in axes(rng) for t in ANGLES]
    rots = np.array(rots)
    mirrors = rots @ np.diag([1.0, -1.0, 1.0])
    assert np.all(np.linalg.det(mirrors) < 0.0)  # scipy's rotations, mirrored
    assert lie.are_rotations(rots).all()
    assert not lie.are_rotations(mirrors).any()
    assert not lie.are_rotations(-rots).any()  # (-R: det -1 too)
    skewed = rots.copy()
    skewed[:, 0, 1] += 1e-7
    assert not lie.are_rotations(skewed).any()
    assert lie.are_rotations(skewed, atol=1e-6).all()
    stack = np.stack((rots[:5], mirrors[:5], 1.001 * rots[:5]))
    stack[0, 3, 2, 2] = np.nan
    stack[1, 4] = rots[4]
    got = lie.are_rotations(stack)
    assert got.shape == (3, 5) and got.dtype == bool
    expected = np.zeros((3, 5), bool)
    expected[0] = [True, True, True, False, True]
    expected[1, 4] = True
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, [[lie.is_rotation(R) for R in row] for row in stack])
    assert (
        lie.are_rotations(rots[0]).shape == () and lie.are_rotations(np.zeros((0, 3, 3))).size == 0
    )
    with pytest.raises(
        ValueError, match=r'R: expected \(\.\.\., 3, 3\) matrices, got shape \(4, 3\)'
    ):
        lie.are_rotations(np.zeros((4, 3)))


@pytest.mark.parametrize('scale', [1e-300, 1e-160, 1e-8, 1.0, 1e160, 1e300])
def test_quat_unit_normalizes_any_finite_non_zero_quaternion(scale: float) -> None:
    """Without a tolerance: scipy's normalized quaternion (same sign) for any scale."""
    rng = np.random.default_rng(19)
    for _ in range(20):
        q = rng.normal(size=4)
        ref = Rotation.from_quat(q).as_quat(canonical=False)
        ref = ref if ref @ q > 0 else -ref
        np.testing.assert_allclose(lie.quat_unit(scale * q), ref, rtol=0, atol=4e-16)


def test_quat_unit_with_a_tolerance_and_its_errors() -> None:
    """With a tolerance, the norm must be 1 within it (the message names the argument, the
    tolerance and the norm got); without, only zero or non-finite ones are refused (and, with
    ``min_norm``, smaller norms: :func:`quat_normalize`'s 1e-9)."""
    q = np.array([0.0, 0.0, 0.6, 0.8])
    np.testing.assert_allclose(lie.quat_unit(q, 'o', 1e-3), q, rtol=0, atol=2e-16)
    np.testing.assert_allclose(lie.quat_unit(1.0009 * q, 'o', 1e-3), q, rtol=0, atol=1e-16)
    for bad, norm in ((1.0011 * q, '1.0011'), (2 * q, '2'), (0 * q, '0'), (1e160 * q, '1e+160')):
        with pytest.raises(ValueError) as info:
            lie.quat_unit(bad, 'robot.orientation', 1e-3)
        assert str(info.value) == (
            'robot.orientation: expected a unit quaternion (x, y, z, w) of norm 1 within 0.001, '
            f'got {bad.tolist()} (norm {norm})'
        )
    for bad in ([np.nan, 0, 0, 1], [np.inf, 0, 0, 1]):
        with pytest.raises(
            ValueError, match=r'^o: expected a unit quaternion .* \(norm (nan|inf)\)'
        ):
            lie.quat_unit(bad, 'o', 1e-3)
    with pytest.raises(ValueError, match=r'^o: expected a unit quaternion'):
        lie.quat_unit(
            [0.0] * 4, 'o', tolerance=2.0
        )  # (zero is no quaternion, whatever the tolerance)
    with pytest.raises(
        ValueError, match=r'^expected a unit quaternion .* got \[0\.0, 0\.0, 2\.0, 0\.0\]'
    ):
        lie.quat_unit([0.0, 0.0, 2.0, 0.0], '', 0.1)  # (no name: the caller adds it)
    for bad in ([0.0] * 4, [np.nan, 0, 0, 1], [0, 0, -np.inf, 1]):
        with pytest.raises(ValueError, match=r'^q\[3:7\]: expected a non-zero finite quaternion'):
            lie.quat_unit(bad, 'q[3:7]')
    with pytest.raises(ValueError, match=r'^q: expected 4 values, got shape \(3,\)'):
        lie.quat_unit([0.0, 0.0, 1.0], 'q')
    tiny = [1e-12] * 4
    np.testing.assert_allclose(lie.quat_unit(tiny), [0.5] * 4, rtol=0, atol=1e-16)
    with pytest.raises(ValueError, match='non-zero finite'):
        lie.quat_unit(tiny, min_norm=1e-9)
    with pytest.raises(ValueError, match='non-zero finite'):
        lie.quat_normalize(tiny)


def test_qconj_inverts_a_unit_quaternion_as_scipy() -> None:
    """``qconj`` (compiled, called here as Python calls it) is scipy's inverse of a unit
    quaternion, exactly (signs only), and ``q * conj(q)`` is the identity; the array form
    agrees bit for bit."""
    rng = np.random.default_rng(23)
    quats = [unit(rng.normal(size=4)) for _ in range(20)]
    quats += [Rotation.from_rotvec(t * a).as_quat() for a in axes(rng) for t in ANGLES]
    for quat in quats:
        got = np.array(lie.qconj(tuple(quat)))
        np.testing.assert_array_equal(got, lie.quat_conjugate(quat))
        ref = Rotation.from_quat(quat).inv().as_quat(canonical=False)
        assert_same_rotation_quat(got, ref, atol=4e-16)  # (scipy normalizes again)
        identity = np.array(lie.qmul(tuple(quat), tuple(got)))
        np.testing.assert_allclose(identity, [0.0, 0.0, 0.0, 1.0], rtol=0, atol=4e-16)


def test_rotation_between_is_the_smallest_rotation_taking_a_to_b() -> None:
    """``R a = b`` with ``R`` proper orthonormal, turning by the angle between them about
    ``a x b`` (scipy's rotation of that vector), down to nearly parallel and opposite vectors."""
    rng = np.random.default_rng(3)
    pairs = [(unit(rng.normal(size=3)), unit(rng.normal(size=3))) for _ in range(50)]
    a0 = unit(rng.normal(size=3))
    pairs += [(a0, a0), (a0, -a0), (a0, unit(a0 + 1e-9 * rng.normal(size=3)))]
    pairs += [(a0, unit(-a0 + 1e-5 * rng.normal(size=3)))]
    for a, b in pairs:
        R = lie.rotation_between(a, b)
        assert lie.is_rotation(R)
        np.testing.assert_allclose(R @ a, b, atol=1e-10)
        angle = float(np.arctan2(np.linalg.norm(np.cross(a, b)), a @ b))
        assert abs(np.linalg.norm(lie.matrix_log(R)) - angle) < 1e-7
        axis = np.cross(a, b)
        if np.linalg.norm(axis) > 1e-3:
            expected = Rotation.from_rotvec(angle * unit(axis)).as_matrix()
            np.testing.assert_allclose(R, expected, atol=1e-12)
    with pytest.raises(ValueError, match='b: expected 3 values'):
        lie.rotation_between(a0, [1.0, 0.0])


def test_bch2_is_the_composition_to_second_order() -> None:
    """``bch2(a, b)`` against ``log(exp(a) exp(b))``: the error shrinks as the cube of the
    angles (a second-order formula), and vanishes for parallel vectors."""
    from ffsim_ros.dynamics.lie import bch2, matrix_exp, matrix_log

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=3), rng.normal(size=3)
    errors = []
    for s in (1e-2, 1e-3):
        exact = matrix_log(matrix_exp(s * a) @ matrix_exp(s * b))
        errors.append(np.linalg.norm(bch2(s * a, s * b) - exact))
    assert errors[0] < 1e-5 and 500 < errors[0] / errors[1] < 2000
    np.testing.assert_allclose(bch2(0.3 * a, 0.2 * a), 0.5 * a, atol=1e-15)
