"""Test helper (not a test module): a Pinocchio model built joint by joint from the body data
of one of ours, for the oracle tests of joint types the URDF route cannot express (ball and
universal joints)."""

from __future__ import annotations

import numpy as np

import ffsim_ros.dynamics as D


def pinocchio_twin(model: D.Model, pin):
    """Pinocchio twin of ``model``: same tree, same inertias, same joint placements.

    Ball joints become ``JointModelSpherical`` (child-frame angular velocity, ``Q exp(e)``
    tangent, as ours), universal ``JointModelUniversal``, prismatic and revolute their
    unaligned models; a floating base a free flyer. Gravity is set from ``model.gravity``.

    Parameters
    ----------
    model : ffsim_ros.dynamics.Model
        Ours.
    pin : module
        ``pinocchio`` (imported by the caller, which skips without it).

    Returns
    -------
    (pin.Model, list[int])
        The model and the Pinocchio joint id of each of our bodies (index 0: the root).
    """
    a = model.arrays
    pm = pin.Model()
    pm.gravity = pin.Motion(np.asarray(model.gravity, float), np.zeros(3))
    jid = [0] * a.parent.shape[0]

    def inertia(i: int):
        return pin.Inertia(float(a.mass[i]), np.array(a.com[i]), np.array(a.inertia[i]))

    if model.floating_base:
        jid[0] = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), 'root')
    pm.appendBodyToJoint(jid[0], inertia(0), pin.SE3.Identity())
    for i in range(1, a.parent.shape[0]):
        kind = model.joint_types[i - 1]
        ax = np.array(a.axis[i])
        if kind == 'spherical':
            jm = pin.JointModelSpherical()
        elif kind == 'universal':
            jm = pin.JointModelUniversal(ax, np.array(a.axis2[i]))
        elif kind == 'prismatic':
            jm = pin.JointModelPrismaticUnaligned(ax)
        else:
            jm = pin.JointModelRevoluteUnaligned(ax)
        placement = pin.SE3(np.array(a.rot[i]), np.array(a.trans[i]))
        jid[i] = pm.addJoint(jid[a.parent[i]], jm, placement, model.joint_names[i - 1])
        pm.appendBodyToJoint(jid[i], inertia(i), pin.SE3.Identity())
    return pm, jid
