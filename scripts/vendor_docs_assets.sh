#!/usr/bin/env bash
# Copies the JavaScript the docs site needs at view time into docs/assets/vendor/, so the site works offline.
#
# Material for MkDocs loads Mermaid from a CDN unless a global `mermaid` is
# already defined; mkdocs.yml loads this local copy through extra_javascript
# first. The copy is git-ignored: minified third-party code stays out of the
# repository and is fetched here from the npm registry, pinned to one version.
set -euo pipefail

MERMAID_VERSION="${MERMAID_VERSION:-11.17.2}"
root="$(cd "$(dirname "$0")/.." && pwd)"
target="$root/docs/assets/vendor/mermaid"
stamp="$target/VERSION"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$MERMAID_VERSION" && -s "$target/mermaid.min.js" ]]; then
    echo "vendor: mermaid $MERMAID_VERSION already in docs/assets/vendor/mermaid"
    exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "vendor: npm is not installed; install Node.js (apt-get install -y npm) and run this again" >&2
    exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# npm pack downloads the published tarball without installing anything.
tarball="$(cd "$work" && npm pack --silent "mermaid@$MERMAID_VERSION")"
tar -xzf "$work/$tarball" -C "$work" package/dist/mermaid.min.js package/LICENSE

mkdir -p "$target"
cp "$work/package/dist/mermaid.min.js" "$target/mermaid.min.js"
cp "$work/package/LICENSE" "$target/LICENSE"
echo "$MERMAID_VERSION" > "$stamp"
echo "vendor: mermaid $MERMAID_VERSION copied to docs/assets/vendor/mermaid"
