# Sourced by the scripts/device_*.sh calls on a bare GPU machine: installs the wheels carried
# in .whl/ (tyro, beartype, ... and this package) into /tmp/site, clones the commit carried as
# .devgit/zoo.bundle into a fresh directory and changes into it (so that each run's history
# records the commit it was trained at; without the bundle, the copied checkout), and prints
# what the machine is. Exits the calling script where the wheels do not install.
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
SRC=$PWD
CLONE=$(mktemp -d /tmp/zoo-src.XXXXXX)
if [ -f .devgit/zoo.bundle ] && git clone -q .devgit/zoo.bundle "$CLONE" 2>/dev/null; then
  SRC=$CLONE
fi
cd "$SRC" || exit 1
export PYTHONPATH=$SRC:${PYTHONPATH:-} XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
git log -1 --oneline 2>/dev/null
nvidia-smi -L 2>/dev/null
