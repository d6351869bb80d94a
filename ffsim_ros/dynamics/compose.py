"""Welding two models into one tree: a weld cut hinge eliminated exactly.

Two free-floating systems (a robot and a target, each a :class:`~.model.Model` with its own
root) joined by a weld do not form a closed chain (the cut hinges of [M sec. 4, eqs. 62, 65-66]
close loops inside one tree): the weld joins two trees into *one* tree, so it needs no
multipliers at all. :func:`weld_models` builds that tree:
model ``b``'s root body is merged into the body carrying ``link`` of model ``a`` (mass, CoM and
inertia by the parallel-axis theorem, as :func:`~.urdf.load_urdf` merges a fixed joint) and
``b``'s moving bodies hang from it, after ``a``'s bodies. The result is an ordinary compiled
:class:`~.model.Model`: every algorithm of the core (ABA, CRBA, RNEA, the momentum-preserving
step) applies, exactly and at the cost of one tree.

Coordinates of the welded model: ``q = [q_a, phi_b]``, ``v = [v_a, phidot_b]`` (``b``'s joints
after ``a``'s, in ``b``'s order). When ``link`` is on ``a``'s base body the base CoM ``r0``
moves with the merge (the base *link* pose does not: convert through
:func:`~.algorithms.base_link_state` / :func:`~.algorithms.base_state_from_link`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .inputs import ArrayLike, as_vector, real_array
from .lie import is_rotation
from .model import BodySpec, Frame, Model, build_model, with_joint_dynamics


def _rotation(value: ArrayLike, what: str) -> np.ndarray:
    R = np.asarray(real_array(value, what), dtype=float)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise ValueError(f'{what}: expected a finite (3, 3) rotation matrix, got {R.tolist()}')
    if not is_rotation(R):
        raise ValueError(f'{what}: expected a rotation matrix (det +1), got {R.tolist()}')
    return R


def body_specs(model: Model) -> list[BodySpec]:
    """The :class:`~.model.BodySpec` list a model was built from (the inverse of
    :func:`~.model.build_model` up to link merging): joints, limits per DoF, damping and
    friction as the model applies them (zero when ``joint_dynamics`` is off).

    Parameters
    ----------
    model : Model

    Returns
    -------
    list of BodySpec
        One per body, the base first (``joint_type='root'``); inertial data in body frames.
    """
    a = model.arrays
    off = model.nv - model.n
    names = model.body_names
    specs = []
    for i in range(a.parent.shape[0]):
        spec = {
            'name': names[i],
            'parent': int(a.parent[i]),
            'joint_rotation': np.array(a.rot[i]),
            'joint_translation': np.array(a.trans[i]),
            'axis': np.array(a.axis[i]) if i else np.array([1.0, 0.0, 0.0]),
            'mass': float(a.mass[i]),
            'com': np.array(a.com[i]),
            'inertia': np.array(a.inertia[i]),
        }
        if i == 0:
            specs.append(BodySpec(joint_name='', joint_type='root', **spec))
            continue
        k = i - 1
        dof = slice(model.idx_v[k] - off, model.idx_v[k] - off + model.nvs[k])
        vel = slice(model.idx_v[k], model.idx_v[k] + model.nvs[k])
        dyn = 1.0 if model.joint_dynamics else 0.0
        kind = model.joint_types[k]
        specs.append(
            BodySpec(
                joint_name=model.joint_names[k],
                joint_type=kind,
                lower=model.lower[dof].tolist(),
                upper=model.upper[dof].tolist(),
                effort=model.effort_limit[dof].tolist(),
                velocity=model.velocity_limit[dof].tolist(),
                damping=(dyn * a.damping[vel]).tolist(),
                friction=(dyn * a.friction[vel]).tolist(),
                axis2=np.array(a.axis2[i]) if kind == 'universal' else None,
                **spec,
            )
        )
    return specs


def _merge_inertial(
    m1: float, c1: np.ndarray, I1: np.ndarray, m2: float, c2: np.ndarray, I2: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """Two rigidly joined inertials (CoMs and inertias about them in one frame) as one."""
    m = m1 + m2
    if m <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    c = (m1 * c1 + m2 * c2) / m
    out = np.zeros((3, 3))
    for mi, ci, Ii in ((m1, c1, I1), (m2, c2, I2)):
        d = ci - c
        out += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, 0.5 * (out + out.T)


def weld_models(
    a: Model,
    link: str,
    b: Model,
    *,
    rotation: ArrayLike | None = None,
    translation: ArrayLike = (0.0, 0.0, 0.0),
    prefix: str = '',
    name: str | None = None,
) -> Model:
    """Model ``b`` (floating base) welded to link ``link`` of model ``a``: one tree.

    Parameters
    ----------
    a : Model
        The carrying system (e.g. the robot); floating or fixed base.
    link : str
        Link of ``a`` that carries ``b`` (e.g. the end effector).
    b : Model
        The carried system (e.g. a captured target); must have a floating base, whose root
        link becomes rigidly attached.
    rotation : (3, 3) array_like, optional
        Orientation of ``b``'s root link frame in the ``link`` frame [-] (default: identity).
    translation : (3,) array_like
        Origin of ``b``'s root link frame in the ``link`` frame [m].
    prefix : str
        Prepended to ``b``'s link and joint names (they must not clash with ``a``'s).
    name : str, optional
        Name of the welded model (default ``'<a>+<b>'``).

    Returns
    -------
    Model
        ``q = [q_a, phi_b]``, ``v = [v_a, phidot_b]``; gravity and joint dynamics of ``a``
        (``b``'s joint damping and friction kept as ``b`` applies them).

    Raises
    ------
    ValueError
        ``b`` without a floating base, different gravities, a bad pose, or clashing names.
    UnknownNameError
        ``link`` is not a link of ``a``.
    """
    host = a.frame(link)
    if not b.floating_base:
        raise ValueError(
            f'weld_models: model {b.name!r} expected a floating base, got a fixed one'
        )
    if not np.array_equal(a.gravity, b.gravity):
        raise ValueError(
            f'weld_models: gravity of {a.name!r} {a.gravity.tolist()} differs from that of '
            f'{b.name!r} {b.gravity.tolist()}'
        )
    R = np.eye(3) if rotation is None else _rotation(rotation, 'weld_models: rotation')
    t = as_vector(translation, 3, 'weld_models: translation')
    if not np.all(np.isfinite(t)):
        raise ValueError(f'weld_models: translation expected finite values, got {t.tolist()}')
    # pose of b's root body frame in the host body frame
    R_hb = host.rotation @ R
    t_hb = host.rotation @ t + host.translation
    specs_a = body_specs(a)
    specs_b = body_specs(b)
    nb_a = len(specs_a)
    hb = host.body
    # b's root body merged into a's host body
    h = specs_a[hb]
    m, c, inertia = _merge_inertial(
        h.mass,
        h.com,
        h.inertia,
        specs_b[0].mass,
        R_hb @ specs_b[0].com + t_hb,
        R_hb @ specs_b[0].inertia @ R_hb.T,
    )
    specs_a[hb] = dataclasses.replace(h, mass=m, com=c, inertia=inertia)
    specs = list(specs_a)
    for spec in specs_b[1:]:
        if spec.parent == 0:
            placed = dataclasses.replace(
                spec,
                parent=hb,
                joint_rotation=R_hb @ spec.joint_rotation,
                joint_translation=R_hb @ spec.joint_translation + t_hb,
            )
        else:
            placed = dataclasses.replace(spec, parent=nb_a + spec.parent - 1)
        specs.append(
            dataclasses.replace(
                placed, name=prefix + spec.name, joint_name=prefix + spec.joint_name
            )
        )
    frames: dict[str, Frame] = dict(a.frames)
    link_names: list[str] = list(a.link_names)
    for nm in b.link_names:
        f = b.frames[nm]
        key = prefix + nm
        if key in frames:
            raise ValueError(
                f'weld_models: link {key!r} of {b.name!r} clashes with a link of {a.name!r} '
                '(pass a prefix)'
            )
        if f.body == 0:
            frames[key] = Frame(hb, R_hb @ f.rotation, R_hb @ f.translation + t_hb)
        else:
            frames[key] = Frame(nb_a + f.body - 1, f.rotation, f.translation)
        link_names.append(key)
    clash = set(a.joint_names) & {prefix + j for j in b.joint_names}
    if clash:
        raise ValueError(
            f'weld_models: joints {sorted(clash)} of {b.name!r} clash with joints of {a.name!r} '
            '(pass a prefix)'
        )
    welded = build_model(
        specs,
        frames,
        link_names,
        floating_base=a.floating_base,
        gravity=a.gravity,
        name=f'{a.name}+{b.name}' if name is None else str(name),
        strict_inertia=False,
    )
    mimics = a.mimics + tuple(
        m._replace(joint=prefix + m.joint, mimicked=prefix + m.mimicked) for m in b.mimics
    )
    welded = dataclasses.replace(welded, mimics=mimics) if mimics else welded
    return with_joint_dynamics(welded, a.joint_dynamics or b.joint_dynamics)


__all__ = ['body_specs', 'weld_models']
