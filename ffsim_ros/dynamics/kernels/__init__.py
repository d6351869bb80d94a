"""Compiled kernels of the recursive rigid-body algorithms, one algorithm per module.

Every quantity here is expressed in the inertial frame Sigma_I, and spatial vectors are taken
at the inertial origin O ("spatial vectors in the ground frame", Featherstone 2008, sec. 5.3)
with the ordering used throughout the package:

* motion vectors ``[v_O; w]`` (3 + 3): ``v_O`` the velocity of the body point that coincides
  with O, ``w`` the angular velocity;
* force vectors ``[f; n_O]``: force and moment about O.

Because every body shares the same frame, composite inertias are plain sums and no spatial
transforms are needed in the recursions. A body's spatial inertia about O is kept in the
compact form ``(m, h, Ib)`` with ``h = m c`` (first moment, kg m) and
``Ib = I_c + m (|c|^2 E - c c^T)`` (kg m^2), i.e. the 6x6 matrix
``[[m E, -h~], [h~, Ib]]``. Summed over the bodies these are the blocks of [S0 eq. 11]
(``M E``, ``M r~_0g^T``, ``M r~_g``, ``I_w``) with the base velocity taken at O instead of the
base CoM (``r_0 = 0`` there, so ``M r~_0g^T = -h~`` and ``I_w = Ib``).

Modules, from the bottom up (each imports only those above it):

========================  =========================================================================
``layout``                joint type codes, :class:`~.layout.ModelArrays`, packing of a model into
                          two flat arrays for the entry points
``spatial``               3x3 and spatial-vector helpers (inlined into the recursions), the
                          entry points' check of their result
``cholesky``              dense Cholesky solve
``friction``              joint damping and Coulomb friction ``F_f`` [S0 eq. 41]
``kinematics``            poses, motion subspaces, world inertias, joint velocity products
``crba``                  composite-rigid-body algorithm (``H``) and the CRBA forward dynamics
``rnea``                  recursive Newton-Euler (inverse dynamics, bias forces)
``momentum``              spatial momentum about O
``aba``                   articulated-body algorithm: three named passes
``lie_group``             ``integrate``/``chart_rate`` on R^3 x SO(3) x R^n and the RK4 step
``entry``                 single-state entry points ``e_*`` (packed model, no named tuples)
``batched``               batched entry points ``b_*`` (rows spread over all cores)
``ltl``                   ``H = L^T L`` with the tree's sparsity (no fill-in), and its solves
``rnea_derivatives``      derivatives of the inverse dynamics on the manifold: four named passes
``aba_derivatives``       forward-dynamics derivatives (``-H^-1`` times the above), entry point
``step_derivatives``      linearization ``(A, B)`` of the RK4 step, entry point
``velocity_derivatives``  derivatives of ``J* phidot`` (generalized Jacobian), entry point
``cut_hinges``            cut-hinge rows of closed chains as wrenches at O, their rank (Jacobi SVD)
``constrained``           closed chains at ABA cost: test-force passes, Delassus system, RK4 step
========================  =========================================================================

The kernels assume bodies numbered so that ``parent[i] < i`` (regular labeling, [M sec. 2]).
Nothing outside :mod:`ffsim_ros.dynamics` imports this package: the algorithms of
:mod:`ffsim_ros.dynamics.algorithms` are the API.
"""
