#!/usr/bin/env bash
# Create/refresh the project virtualenv (idempotent). Called by `make setup`.
#
#   PYTHON=python3.11 VENV=.venv bash tools/setup_venv.sh
#
# Two modes, chosen automatically:
#   system: a ROS 2 distro is sourced (ROS_DISTRO set and rclpy importable by $PYTHON or by
#           python3). The venv uses --system-site-packages and the distro's rclpy, messages
#           and interface packages; no ROS wheels are installed and nothing is built.
#   wheels: otherwise. ROS 2 Kilted comes from PyPI wheels (requirements/ros-kilted*.txt) and
#           the interface packages the wheels lack are built from interfaces/<pkg> into the
#           venv (rosidl + cmake, see build_interface): tf2_msgs (msg/TFMessage),
#           simulation_interfaces (all of it) and control_msgs (action/FollowJointTrajectory).
# Either way the dev requirements and the ffsim_ros package itself (editable) are installed.
#
# Environment knobs: FFSIM_ROS_MODE=system|wheels forces a mode; FFSIM_FORCE=1 ignores the
# stamps and reinstalls/rebuilds everything.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3.11}"
VENV="${VENV:-.venv}"
case "$VENV" in /*) VENV_ABS="$VENV" ;; *) VENV_ABS="$ROOT/$VENV" ;; esac
VPY="$VENV_ABS/bin/python"
BUILD_DIR="$ROOT/build/interfaces"
FORCE="${FFSIM_FORCE:-0}"

log() { printf '[setup_venv] %s\n' "$*" >&2; }
die() { printf '[setup_venv] ERROR: %s\n' "$*" >&2; exit 1; }

# Run the venv interpreter as a fresh top-level process: the wheels' bootstrapper must be
# allowed to re-exec it with its library path even when this script was started from another
# (already bootstrapped) ROS-wheels interpreter.
# It runs from / so that the repo checkout on sys.path[0] cannot mask a missing install.
vpy() { (cd / && env -u _ROS_WHEELS_BOOTSTRAP_COMPLETE "$VPY" "$@"); }

hash_files() { cat "$@" | sha256sum | cut -d' ' -f1; }

# ---------------------------------------------------------------------------- mode selection
MODE="${FFSIM_ROS_MODE:-}"
BASE_PY=""
if [[ -z "$MODE" ]]; then
  MODE=wheels
  if [[ -n "${ROS_DISTRO:-}" ]]; then
    for cand in "$PYTHON" python3; do
      if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import rclpy' >/dev/null 2>&1; then
        MODE=system
        BASE_PY="$cand"
        break
      fi
    done
    if [[ "$MODE" == wheels ]]; then
      log "ROS_DISTRO=$ROS_DISTRO is set but no interpreter can import rclpy; using Kilted wheels"
    fi
  fi
fi
case "$MODE" in
  system) BASE_PY="${BASE_PY:-python3}" ;;
  wheels) BASE_PY="$PYTHON" ;;
  *) die "FFSIM_ROS_MODE must be 'system' or 'wheels', got '$MODE'" ;;
esac
command -v "$BASE_PY" >/dev/null 2>&1 || die "interpreter '$BASE_PY' not found on PATH"
BASE_VER="$("$BASE_PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
log "mode: $MODE (ROS_DISTRO=${ROS_DISTRO:-unset}, python $BASE_VER via $BASE_PY)"

# ------------------------------------------------------------------------------------- venv
MODE_FILE="$VENV_ABS/.ffsim-ros-mode"
WANT_MODE_LINE="$MODE $BASE_VER"
if [[ -d "$VENV_ABS" ]]; then
  have_mode="$(cat "$MODE_FILE" 2>/dev/null || true)"
  if [[ "$have_mode" != "$WANT_MODE_LINE" ]] || ! "$VPY" -c '' >/dev/null 2>&1; then
    log "existing $VENV is '${have_mode:-unknown}' (want '$WANT_MODE_LINE') or broken: recreating"
    rm -rf "$VENV_ABS"
  fi
fi
if [[ ! -d "$VENV_ABS" ]]; then
  venv_args=()
  if [[ "$MODE" == system ]]; then venv_args+=(--system-site-packages); fi
  log "creating $VENV with $BASE_PY ${venv_args[*]:-}"
  "$BASE_PY" -m venv "${venv_args[@]}" "$VENV_ABS"
  echo "$WANT_MODE_LINE" >"$MODE_FILE"
fi

# ------------------------------------------------------------------------- python packages
# dev.txt includes ray.txt and parquet.txt (the campaign's optional executor and format, which
# the tests use): listed here too so that their edits change the stamp below.
REQS=(requirements/dev.txt requirements/ray.txt requirements/parquet.txt)
if [[ "$MODE" == wheels ]]; then
  REQS+=(requirements/ros-kilted.txt requirements/ros-kilted-build.txt)
fi
PIP_ARGS=()
for r in "${REQS[@]}"; do PIP_ARGS+=(-r "$ROOT/$r"); done

CONSTRAINTS="$VENV_ABS/.ffsim-system-constraints.txt"
if [[ "$MODE" == system ]]; then
  # The distro's message packages are compiled against its numpy: never replace it in the venv.
  : >"$CONSTRAINTS"
  sys_numpy="$("$BASE_PY" -c 'import numpy; print(numpy.__version__)' 2>/dev/null || true)"
  if [[ -n "$sys_numpy" ]]; then echo "numpy==$sys_numpy" >>"$CONSTRAINTS"; fi
  PIP_ARGS+=(-c "$CONSTRAINTS")
fi

REQ_STAMP="$VENV_ABS/.ffsim-requirements.sha256"
req_hash="$(
  echo "$WANT_MODE_LINE"
  cat "${REQS[@]}"
  if [[ "$MODE" == system ]]; then cat "$CONSTRAINTS"; fi
)"
req_hash="$(printf '%s' "$req_hash" | sha256sum | cut -d' ' -f1)"
if [[ "$FORCE" != 1 && "$(cat "$REQ_STAMP" 2>/dev/null || true)" == "$req_hash" ]]; then
  log "requirements unchanged since last install: skipping pip"
else
  log "installing ${REQS[*]}"
  vpy -m pip install --disable-pip-version-check -q "${PIP_ARGS[@]}"
  echo "$req_hash" >"$REQ_STAMP"
fi

# ------------------------------------------------------------------------------ ament index
if [[ "$MODE" == wheels ]]; then
  # The venv is the install prefix of the wheels (share/ament_index, share/<pkg>, lib/), but
  # ament_index_python only reads AMENT_PREFIX_PATH. Like sourcing a ROS install would, make
  # the venv's interpreter put its own prefix on it at start-up (no-op if already there).
  site_dir="$(vpy -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  cat >"$site_dir/ffsim_ros_ament_prefix.pth" <<'PTH'
import os, sys; _p = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]; sys.prefix in _p or os.environ.__setitem__('AMENT_PREFIX_PATH', os.pathsep.join([sys.prefix] + _p)); del _p
PTH
fi

# ------------------------------------------------------------------------------- ffsim_ros
PKG_STAMP="$VENV_ABS/.ffsim-package.sha256"
pkg_hash="$(hash_files setup.py setup.cfg package.xml)"
if [[ "$FORCE" != 1 && "$(cat "$PKG_STAMP" 2>/dev/null || true)" == "$pkg_hash" ]] \
  && vpy -c 'import ffsim_ros' >/dev/null 2>&1; then
  log "ffsim_ros already installed (editable): skipping"
else
  log "installing ffsim_ros (editable, --no-deps)"
  vpy -m pip install --disable-pip-version-check -q --no-deps -e "$ROOT"
  echo "$pkg_hash" >"$PKG_STAMP"
fi

# ---------------------------------------------------------------- kernels, in the background
# The numba kernels of ffsim_ros.dynamics compile in a process of their own (about 4 minutes of
# one core when nothing is cached) while the interface packages build: when set-up ends, the
# on-disk caches are there and the first node, test or demo starts in seconds (`make warmup`
# then only loads them). Skipped with FFSIM_SKIP_WARMUP=1.
# Two processes, one per core (the parts of ffsim_ros.dynamics.warmup: the algorithms; the
# derivatives and the closed chains): with the interface build they keep both cores busy
# (one process left the second core idle for minutes once the build was done). A cache entry
# lost to their concurrent writes is compiled again by `make warmup`.
WARMUP_LOG="$VENV_ABS/.ffsim-warmup.log"
WARMUP_LOG2="$VENV_ABS/.ffsim-warmup-2.log"
WARMUP_PID=""
WARMUP_PID2=""
if [[ "${FFSIM_SKIP_WARMUP:-0}" != 1 ]]; then
  log "compiling the dynamics kernels in the background (logs: ${WARMUP_LOG#"$ROOT"/}, ${WARMUP_LOG2#"$ROOT"/})"
  (cd / && exec env -u _ROS_WHEELS_BOOTSTRAP_COMPLETE "$VPY" -m ffsim_ros.dynamics.warmup \
    algorithms) >"$WARMUP_LOG" 2>&1 &
  WARMUP_PID=$!
  (cd / && exec env -u _ROS_WHEELS_BOOTSTRAP_COMPLETE "$VPY" -m ffsim_ros.dynamics.warmup \
    derivatives closed) >"$WARMUP_LOG2" 2>&1 &
  WARMUP_PID2=$!
  # a failed build below must not leave them running
  trap 'for p in "$WARMUP_PID" "$WARMUP_PID2"; do [[ -n "$p" ]] && kill "$p" 2>/dev/null; done; true' EXIT
fi

# ---------------------------------------------------------------------- interface packages
# Built in this order (control_msgs needs trajectory_msgs, which comes as a wheel). Each entry:
# "<package> <python statement that must succeed once it is installed>".
INTERFACES=(
  'tf2_msgs from tf2_msgs.msg import TFMessage'
  'simulation_interfaces import simulation_interfaces.srv, simulation_interfaces.action'
  'control_msgs from control_msgs.action import FollowJointTrajectory'
)

# Build interfaces/<pkg> with rosidl (cmake) and install it into the venv, unless the stamp says
# the same sources were already built against the same wheels and the package imports.
build_interface() {
  local pkg="$1" check="$2"
  local src="$ROOT/interfaces/$pkg" bdir="$BUILD_DIR/$pkg"
  local stamp="$VENV_ABS/share/$pkg/.ffsim-source.sha256"
  local src_hash
  # Sources, the cmake hook and the ROS wheels built against (a new wheel set rebuilds).
  src_hash="$(cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum \
    | cat - "$ROOT/tools/cmake/fix_wheel_include_dirs.cmake" "$ROOT"/requirements/ros-kilted*.txt \
    | sha256sum | cut -d' ' -f1)"
  if [[ "$FORCE" != 1 && "$(cat "$stamp" 2>/dev/null || true)" == "$src_hash" ]] \
    && vpy -c "$check" >/dev/null 2>&1; then
    log "$pkg already built and importable: skipping build"
    return
  fi
  command -v cmake >/dev/null 2>&1 || die "cmake (>= 3.20) is needed to build $pkg"
  command -v c++ >/dev/null 2>&1 || die "a C/C++ compiler (c++) is needed to build $pkg"
  local gen=()
  if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
  log "building $pkg from interfaces/$pkg into $VENV (build dir: ${bdir#"$ROOT"/})"
  rm -rf "$bdir"
  mkdir -p "$bdir"
  local t0=$SECONDS
  # The ament index is read from AMENT_PREFIX_PATH: the venv is the install prefix of the wheels.
  (
    export AMENT_PREFIX_PATH="$VENV_ABS" PATH="$VENV_ABS/bin:$PATH"
    unset _ROS_WHEELS_BOOTSTRAP_COMPLETE
    cmake -S "$src" -B "$bdir" "${gen[@]}" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$VENV_ABS" \
      -DCMAKE_PREFIX_PATH="$VENV_ABS" \
      -DCMAKE_PROJECT_INCLUDE="$ROOT/tools/cmake/fix_wheel_include_dirs.cmake" \
      -DPython3_EXECUTABLE="$VPY" \
      -DBUILD_TESTING=OFF >"$bdir/configure.log" 2>&1 \
      || { tail -n 40 "$bdir/configure.log" >&2; exit 1; }
    cmake --build "$bdir" >"$bdir/build.log" 2>&1 \
      || { tail -n 60 "$bdir/build.log" >&2; exit 1; }
    # Libraries land in <venv>/lib (put on the library path by ros-wheels-bootstrapper at
    # interpreter start), the Python package in <venv>/lib/pythonX.Y/site-packages.
    cmake --install "$bdir" >"$bdir/install.log" 2>&1 \
      || { tail -n 40 "$bdir/install.log" >&2; exit 1; }
  ) || die "$pkg build failed (logs in ${bdir#"$ROOT"/})"
  vpy -c "$check" || die "$pkg was built but '$check' fails"
  echo "$src_hash" >"$stamp"
  log "$pkg built in $((SECONDS - t0)) s"
}

for entry in "${INTERFACES[@]}"; do
  pkg="${entry%% *}"
  if [[ "$MODE" == wheels ]]; then
    build_interface "$pkg" "${entry#* }"
  elif ! vpy -c "${entry#* }" >/dev/null 2>&1; then
    log "WARNING: ROS_DISTRO=$ROS_DISTRO has no $pkg; install ros-$ROS_DISTRO-${pkg//_/-}"
  fi
done

if [[ -n "$WARMUP_PID" ]]; then
  log "waiting for the kernel compilation"
  status=0
  wait "$WARMUP_PID" || status=$?
  WARMUP_PID=""
  [[ $status == 0 ]] || { cat "$WARMUP_LOG" >&2; die "kernel compilation failed ($status)"; }
  log "$(tail -n 1 "$WARMUP_LOG")"
  status=0
  wait "$WARMUP_PID2" || status=$?
  WARMUP_PID2=""
  [[ $status == 0 ]] || { cat "$WARMUP_LOG2" >&2; die "kernel compilation failed ($status)"; }
  log "$(tail -n 1 "$WARMUP_LOG2")"
fi

# --------------------------------------------------------------------------------- check
vpy - <<'EOF' || die "environment check failed"
import importlib
interfaces = ('tf2_msgs', 'trajectory_msgs', 'simulation_interfaces', 'control_msgs')
for name in ('rclpy', 'std_msgs.msg', 'geometry_msgs.msg', 'sensor_msgs.msg', 'nav_msgs.msg',
             'visualization_msgs.msg', 'rosgraph_msgs.msg', 'std_srvs.srv', 'rcl_interfaces.msg',
             'tf2_msgs.msg', 'trajectory_msgs.msg', 'simulation_interfaces.srv',
             'simulation_interfaces.action', 'control_msgs.action', 'ffsim_ros'):
    importlib.import_module(name)
from ament_index_python.packages import get_package_share_directory
for pkg in interfaces:
    get_package_share_directory(pkg)
from rclpy.utilities import get_rmw_implementation_identifier
print('[setup_venv] OK: rclpy + messages + interface packages + ffsim_ros import; rmw =',
      get_rmw_implementation_identifier())
EOF
