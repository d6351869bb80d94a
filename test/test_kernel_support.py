"""The compiled-kernel plumbing: workspace views, the direct entry points, the no-JIT fallback.

The kernels exist twice: compiled by numba, and as the plain Python they are written in (used
where numba is missing or ``NUMBA_DISABLE_JIT=1``). Both must give the same numbers, and the
tricks that make the compiled calls cheap (views carved without ``reshape``, one compiled
signature called directly) must not change a result.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ffsim_ros.dynamics.jit import HAVE_NUMBA, borrow, carve, keep_alive, njit


@njit
def _carve_three(ws: np.ndarray, nb: int):  # compiled when numba is there
    return carve(ws, 0, (nb, 3, 3)), carve(ws, 9 * nb, (nb, 6)), carve(ws, 15 * nb, (0, 6))


@njit
def _carve_at(ws: np.ndarray, offset: int, rows: int):
    return carve(ws, offset, (rows, 3))


def test_carve_is_reshape_of_a_slice() -> None:
    ws = np.arange(100.0)
    R, V, E = _carve_three(ws, 4)
    np.testing.assert_array_equal(R, ws[:36].reshape(4, 3, 3))
    np.testing.assert_array_equal(V, ws[36:60].reshape(4, 6))
    assert R.flags.c_contiguous and V.flags.c_contiguous and E.shape == (0, 6)
    R[1, 2, 0] = -7.0  # a view, not a copy
    V[3, 5] = -8.0
    assert ws[15] == -7.0 and ws[59] == -8.0
    frozen = np.arange(30.0)
    frozen.setflags(write=False)
    np.testing.assert_array_equal(_carve_at(frozen, 3, 2), frozen[3:9].reshape(2, 3))


@pytest.mark.parametrize('offset, rows', [(95, 2), (-1, 1), (0, 34)])
def test_carve_out_of_range_raises(offset: int, rows: int) -> None:
    with pytest.raises(ValueError, match='does not fit in the workspace'):
        _carve_at(np.zeros(100), offset, rows)


@njit
def _views_of(borrowed: bool):
    owner = np.arange(12.0)
    src = borrow(owner) if borrowed else owner
    a = src[0:6]
    b = carve(src, 6, (2, 3))
    c = src[::2]
    a[0] = -1.0  # written through the views
    b[1, 2] = -2.0
    counts = _refcount(owner)
    total = a.sum() + b.sum() + c.sum()
    keep_alive(owner)
    return counts, total, owner.copy()


if HAVE_NUMBA:
    from numba.core.unsafe.refcount import get_refcount as _refcount
else:  # pragma: no cover

    def _refcount(a: np.ndarray) -> int:
        return sys.getrefcount(a)


@pytest.mark.skipif(not HAVE_NUMBA, reason='reference counting of compiled code')
def test_borrowed_views_share_the_data_and_hold_no_reference() -> None:
    """What the entry points rely on (:func:`ffsim_ros.dynamics.jit.borrow`): views taken from
    a borrowed array read and write the owner's memory, and do not raise its reference count
    (the atomic operations that were a third of a UR5 bias-forces call), where the same views
    of the owner itself do."""
    expected = np.arange(12.0)
    expected[0], expected[11] = -1.0, -2.0
    owned, total_owned, after_owned = _views_of(False)
    borrowed, total_borrowed, after_borrowed = _views_of(True)
    np.testing.assert_array_equal(after_borrowed, expected)
    np.testing.assert_array_equal(after_owned, expected)
    assert (
        total_borrowed
        == total_owned
        == expected[:6].sum() + expected[6:].sum() + expected[::2].sum()
    )
    assert borrowed == 1
    assert owned >= 2  # the owner and the views still in use (numba prunes some counts)


_LIFETIME_PROBE = r"""
import numpy as np
from numba import njit
from ffsim_ros.dynamics.jit import borrow, keep_alive

@njit
def overwrite(n):  # (an allocation of the same size, written: the freed owner's block)
    x = np.empty(n)
    x[:] = 7.0
    return x

@njit
def held(n):
    own = np.empty(n)
    own[:] = 1.0
    b = borrow(own)
    x = overwrite(n)
    r = b[0] + 0.0 * x[0]
    keep_alive(own)
    return r

@njit
def released(n):  # the same without keep_alive: numba frees own after its last use
    own = np.empty(n)
    own[:] = 1.0
    b = borrow(own)
    x = overwrite(n)
    return b[0] + 0.0 * x[0]

print(held(10), released(10))
"""


@pytest.mark.skipif(not HAVE_NUMBA, reason='reference counting of compiled code')
def test_keep_alive_holds_the_owner_of_borrowed_views() -> None:
    """A compiled function that borrows an array it allocated must hold it with
    :func:`~ffsim_ros.dynamics.jit.keep_alive`: numba frees a variable after its last use,
    and a borrowed view does not count. glibc's ``MALLOC_PERTURB_`` (the thread cache off, so
    that every free is poisoned) makes a view of a freed owner read the poison: the control
    without ``keep_alive`` must read it (else this probe could not see an owner freed early),
    the held one its own data."""
    env = {
        **os.environ,
        'MALLOC_PERTURB_': '165',
        'GLIBC_TUNABLES': 'glibc.malloc.tcache_count=0',
        'NUMBA_DISABLE_JIT': '0',  # (compiled code is what the probe is about)
        'NUMBA_CACHE_DIR': os.environ.get('NUMBA_CACHE_DIR', ''),
    }
    env = {k: v for k, v in env.items() if v}
    proc = subprocess.run(
        [sys.executable, '-c', _LIFETIME_PROBE], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    held, released = (float(x) for x in proc.stdout.split())
    assert held == 1.0
    assert released != 1.0  # the poison (or the overwrite): the early free is visible


_ALLOCATIONS = {'empty', 'zeros', 'ones', 'full', 'empty_like', 'zeros_like', 'copy'}


def _call_name(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ''


def _borrowed_owners(fn: ast.FunctionDef) -> dict[str, int]:
    """Names ``fn`` assigns an allocation to and hands to ``borrow`` (itself or a slice of
    it), with the line of the first ``borrow``."""
    owners = {
        node.targets[0].id
        for node in ast.walk(fn)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and _call_name(node.value) in _ALLOCATIONS
    }
    first: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and _call_name(node) == 'borrow' and node.args:
            arg = node.args[0]
            base = arg.value if isinstance(arg, ast.Subscript) else arg
            if isinstance(base, ast.Name) and base.id in owners:
                first[base.id] = min(first.get(base.id, node.lineno), node.lineno)
    return first


def _kept(stmt: ast.stmt, owner: str) -> bool:
    """Whether ``stmt`` is ``keep_alive(owner)``."""
    return (
        isinstance(stmt, ast.Expr)
        and _call_name(stmt.value) == 'keep_alive'
        and isinstance(stmt.value.args[0], ast.Name)
        and stmt.value.args[0].id == owner
    )


def _unkept_exits(body: list, owner: str, after: int, kept: bool) -> list[int]:
    """Lines of the exits of ``body`` (returns, and its end when it falls off) past line
    ``after`` not preceded by ``keep_alive(owner)`` in their own or an enclosing block, nor
    returning ``owner`` itself."""
    bad = []
    for stmt in body:
        kept = kept or (_kept(stmt, owner) and stmt.lineno > after)
        if isinstance(stmt, ast.Return):
            returns_it = stmt.value is not None and any(
                isinstance(n, ast.Name) and n.id == owner for n in ast.walk(stmt.value)
            )
            if stmt.lineno > after and not (kept or returns_it):
                bad.append(stmt.lineno)
        elif not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            for field in ('body', 'orelse', 'finalbody'):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    bad += _unkept_exits(inner, owner, after, kept)
    return bad


def test_every_borrowed_allocation_is_kept_to_each_exit() -> None:
    """In every compiled kernel, an array allocated and then borrowed is held by
    ``keep_alive`` on every path out of the function past the ``borrow`` (or returned):
    the rule :func:`test_keep_alive_holds_the_owner_of_borrowed_views` shows the need of
    (the closed-chain step borrows its per-evaluation scratch)."""
    root = Path(__file__).resolve().parent.parent / 'ffsim_ros' / 'dynamics' / 'kernels'
    found, missing = 0, []
    for path in sorted(root.glob('*.py')):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for owner, line in _borrowed_owners(fn).items():
                found += 1
                bad = _unkept_exits(fn.body, owner, line, False)
                falls_off = not isinstance(fn.body[-1], ast.Return)
                if falls_off and not any(_kept(s, owner) for s in fn.body):
                    bad.append(fn.body[-1].end_lineno)
                missing += [f'{path.name}:{b} {fn.name}: {owner}' for b in bad]
    assert found >= 12  # (the rule must see the borrowed owners it is about)
    assert not missing, missing


_PROBE = r"""
import json, sys
import numpy as np
import ffsim_ros.dynamics as D
from ffsim_ros.dynamics.random_urdf import random_urdf
from ffsim_ros.resources import sample_robot

out = {}
for name, urdf in (('servicer', sample_robot('ffsim_servicer_7dof').read_text()),
                   ('tree', random_urdf(5, 6))):
    model = D.with_joint_dynamics(D.load_urdf(urdf))
    rng = np.random.default_rng(4)
    q = D.neutral(model)
    q[7:] = rng.uniform(-1, 1, model.n)
    v, a, tau = rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.n)
    if sys.argv[1] == 'readonly':  # the first calls of this process get read-only inputs
        for x in (q, v, a, tau):
            x.setflags(write=False)
    out[name] = {
        'fd': D.forward_dynamics(model, q, v, tau).tolist(),
        'crba': D.mass_matrix(model, q).ravel().tolist(),
        'nle': D.bias_forces(model, q, v).tolist(),
        'rnea': D.inverse_dynamics(model, q, v, a).tolist(),
        'step': np.concatenate(D.step(model, q, v, tau, 1e-3)).tolist(),
    }
from ffsim_ros.dynamics.kernels import entry as K
from numba.core.dispatcher import Dispatcher
out['compiled'] = isinstance(K.e_nle, Dispatcher)
if sys.argv[1] == 'readonly':
    from numba import types
    out['readonly_signatures'] = sum(
        any(isinstance(t, types.Array) and not t.mutable for t in sig[2:])
        for k in (K.e_aba, K.e_nle, K.e_rnea, K.e_mass_matrix)
        for sig in k.signatures
    )
print(json.dumps(out))
"""


def _probe(mode: str, **env: str) -> dict:
    proc = subprocess.run(
        [sys.executable, '-c', _PROBE, mode],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def compiled() -> dict:
    """The probe's results from the compiled kernels, writeable inputs."""
    got = _probe('plain')
    assert got.pop('compiled') is HAVE_NUMBA
    return got


@pytest.mark.skipif(not HAVE_NUMBA, reason='the compiled side of the comparison needs numba')
def test_interpreted_kernels_match_compiled(compiled: dict) -> None:
    """The same kernels run as plain Python (``NUMBA_DISABLE_JIT=1``, what a machine without
    numba runs) agree with the compiled ones to rounding."""
    interpreted = _probe('plain', NUMBA_DISABLE_JIT='1')
    assert interpreted.pop('compiled') is False
    for robot, results in compiled.items():
        for what, ref in results.items():
            np.testing.assert_allclose(
                interpreted[robot][what], ref, rtol=1e-12, atol=1e-12, err_msg=f'{robot} {what}'
            )


@pytest.mark.skipif(not HAVE_NUMBA, reason='entry points exist only when compiled')
def test_readonly_first_call_keeps_the_one_signature(compiled: dict) -> None:
    """A process whose first calls get read-only inputs still compiles (or loads) only the
    writeable-input signature that every later direct call is unboxed as, and its results
    are the same as for writeable inputs."""
    got = _probe('readonly')
    assert got.pop('compiled') is True
    assert got.pop('readonly_signatures') == 0
    for robot, results in compiled.items():
        for what, ref in results.items():
            np.testing.assert_array_equal(got[robot][what], ref, err_msg=f'{robot} {what}')


def test_arrays_made_by_the_kernels_take_the_fast_path() -> None:
    """The state a compiled step returns goes straight back into the next step: ``is_ready``
    accepts it (its float64 dtype equals numpy's without being the same object), and it
    refuses what must be converted first."""
    import ffsim_ros.dynamics as D
    from ffsim_ros.dynamics.inputs import is_ready
    from ffsim_ros.resources import sample_robot

    model = D.load_urdf(sample_robot('ffsim_servicer_7dof').read_text())
    q, v = D.step(model, D.neutral(model), np.zeros(model.nv), np.ones(model.n), 1e-3)
    assert is_ready(q, (model.nq,)) and is_ready(v, (model.nv,))
    assert not is_ready(q.astype(np.float32), (model.nq,))
    assert not is_ready(q.astype('>f8'), (model.nq,))
    assert not is_ready(np.repeat(q, 2)[::2], (model.nq,))  # strided
    assert not is_ready(list(q), (model.nq,))
    assert not is_ready(q, (model.nq + 1,))
