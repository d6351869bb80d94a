"""The warm-up of ``make setup`` covers what the nodes use: after it, a process that runs the
simulator's engine (a tree and a closed chain, with and without joint friction too stiff for
the step), the reactionless controller and the capture of a tumbling target compiles nothing.

numba compiles one specialization per argument type, down the whole call tree: a read-only
array where the warm-up passed a writeable one (a broadcast batch, an engine's frozen state
handed to a dispatcher) is another type, and a first start after set-up would compile for
tens of seconds. The per-call fast paths call one native entry point whatever the flags of
their inputs (``algorithms._Direct``); the batched paths make their rows writeable. The child
process runs the warm-up (loaded from the on-disk cache that ``make test`` has just written),
records every specialization of every compiled entry point, runs the workloads, and lists the
specializations they added.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ffsim_ros.dynamics.warmup import PARTS, warm_up

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import importlib, json, pkgutil
import numpy as np
from numba.core.registry import CPUDispatcher
import ffsim_ros.dynamics as D
import ffsim_ros.dynamics.kernels as K
from ffsim_ros.control import CONTROL_MODES, ReactionlessController
from ffsim_ros.dynamics.warmup import warm_up
from ffsim_ros.resources import sample_robot
from ffsim_ros.sim import Engine

names = [f'{K.__name__}.{m.name}' for m in pkgutil.iter_modules(K.__path__)]
modules = [importlib.import_module(name) for name in names]
modules.append(importlib.import_module('ffsim_ros.dynamics.lie'))

def specializations():
    out = set()
    for mod in modules:
        for name, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod.__name__:
                out |= {f'{name}{tuple(str(t) for t in sig)}' for sig in obj.overloads}
    return out

warm_up()
before = specializations()
for robot, ee in (('ffsim_servicer_7dof', 'ee_link'), ('dual_arm_servicer', 'left_ee_link')):
    model = D.load_urdf(sample_robot(robot))
    q = D.neutral(model)
    q[7:] = np.linspace(-0.4, 0.4, model.n)
    engine = Engine(model, q, np.zeros(model.nv), dt_ns=1_000_000)
    for tau in (np.full(model.n, 0.5), np.full(model.n, 40.0)):  # quiet, then near the limits
        engine.command_efforts(tau)
        snap = engine.advance(20)
        assert not snap.faulted, snap.fault
    engine.set_base_wrench(np.ones(6), frame='base')
    snap = engine.advance(3)
    goal = D.link_pose(model, snap.q, ee)[0] + np.array([0.05, 0.05, -0.05])
    for mode in CONTROL_MODES:
        law = ReactionlessController(model, ee, mode=mode)
        out = law.compute(snap.q, snap.v, goal, attitude_reference=snap.q[3:7])
        assert np.all(np.isfinite(out.tau))
# a closed chain in the engine: frozen (read-only) states, per-step batches at the drives
from ffsim_ros.dynamics.mufti.samples import tumbling_platform
chain, q, v = tumbling_platform()
model = chain.model
for conserve in (True, False):  # (the momentum projection is a run-time flag)
    engine = Engine(model, q, 3.0 * v, dt_ns=1_000_000, chain=chain, conserve_momentum=conserve)
    engine.command_efforts(np.full(model.n, 1.0))
    snap = engine.advance(30)
    assert not snap.faulted, snap.fault
# ... with joint friction too stiff for the step: split steps (.mufti.chain_friction)
import dataclasses
f = np.zeros(model.nv)
f[6:] = 0.5
rough = D.with_joint_dynamics(dataclasses.replace(model, arrays=model.arrays._replace(friction=f)))
rough_chain = D.ClosedChain(rough, chain.loops)
assert rough_chain._split.stiff(q, 1e-3)
engine = Engine(rough, q, 3.0 * v, dt_ns=1_000_000, chain=rough_chain)
engine.command_efforts(np.full(model.n, 1.0))
assert not engine.advance(30).faulted
engine.set_base_wrench(np.ones(6), frame='base')
assert not engine.advance(3).faulted
from ffsim_ros.control.capture_loop import CaptureLoop, tumbling_target_scene
scene, target = tumbling_target_scene()
result = CaptureLoop(scene, target, mode='momentum_distribution').run(5.0)
assert result.capture is not None  # the welded steps ran too
print(json.dumps(sorted(specializations() - before)))
"""


def test_nodes_compile_nothing_after_the_warmup() -> None:
    done = subprocess.run(
        [sys.executable, '-c', CHILD], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    added = json.loads(done.stdout.strip().splitlines()[-1])
    assert added == [], 'specializations the warm-up does not compile:\n' + '\n'.join(added)


def test_warm_up_parts_are_named_and_checked() -> None:
    """``make setup`` compiles the parts in two processes; together they are every part, and
    a part that does not exist is an error naming it (not a silent no-op)."""
    assert set(PARTS) == {'algorithms', 'derivatives', 'closed'}
    setup = (ROOT / 'tools' / 'setup_venv.sh').read_text()
    assert 'warmup \\\n    algorithms)' in setup and 'warmup \\\n    derivatives closed)' in setup
    with pytest.raises(ValueError, match=r"parts: expected some of .*, got \['algebra'\]"):
        warm_up(('algebra',))


def test_stale_caches_are_cleared_when_a_kernel_source_changes(tmp_path: Path) -> None:
    """numba keys a cached function on its own file: a kernel inlining a callee from another
    file kept the callee's old machine code after an edit of it (found measuring this
    session's kernel changes: the entry points ran the old kinematics). The warm-up deletes
    the package's cache files when a compiled module's text changed, and only then."""
    from ffsim_ros.dynamics.warmup import STAMP, clear_stale_caches, kernel_sources_digest

    pkg = tmp_path / 'pkg'
    (pkg / 'sub' / '__pycache__').mkdir(parents=True)
    kernel = pkg / 'sub' / 'kernel.py'
    kernel.write_text('@njit\ndef f(x):\n    return x\n')
    plain = pkg / 'node.py'
    plain.write_text('def g():\n    return 1\n')

    def caches() -> list[Path]:
        return sorted(pkg.rglob('*.nb[ic]'))

    def compiled() -> None:  # what numba writes next to the sources
        for name in ('kernel.f-1.py311.nbi', 'kernel.f-1.py311.1.nbc'):
            (pkg / 'sub' / '__pycache__' / name).write_bytes(b'x')

    compiled()
    assert clear_stale_caches(pkg) == 2 and caches() == []  # no stamp: built from unknown sources
    assert (pkg / STAMP).read_text().strip() == kernel_sources_digest(pkg)
    compiled()
    assert clear_stale_caches(pkg) == 0 and len(caches()) == 2  # unchanged: kept
    plain.write_text('def g():\n    return 2\n')  # not compiled by numba: kept
    assert clear_stale_caches(pkg) == 0 and len(caches()) == 2
    kernel.write_text('@njit\ndef f(x):\n    return 2 * x\n')
    assert clear_stale_caches(pkg) == 2 and caches() == []
    assert clear_stale_caches(pkg) == 0
