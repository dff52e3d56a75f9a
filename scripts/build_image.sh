#!/usr/bin/env bash
# Builds the tuner's container image (image/Containerfile) with no container daemon and no registry to pull a base
# from: the base is a Debian 12 root filesystem made from Debian packages (mmdebstrap), the image is built on it by
# buildah (chroot isolation, a store of its own under a temporary directory, removed afterwards), and written as an
# OCI archive with its manifest's digest. The reference is the Helm chart's default (helm/chronos: image.repository,
# the chart's appVersion, which is chronos's version). Push it to a registry of your own with
#   buildah push ARCHIVE-REF docker://REGISTRY/chronos:TAG   (or: podman load -i ARCHIVE; podman push ...)
# Needs root (mmdebstrap and buildah build in chroots here) and mmdebstrap, buildah (scripts/setup.sh installs
# both), Debian's mirror and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
usage: scripts/build_image.sh [--out DIR] [--base-cache DIR]

Builds the chronos tuner's image (image/Containerfile) on a Debian 12 base made from Debian packages, without a
container daemon or a registry, and writes into DIR (default: dist/):
  chronos-image-VERSION.oci.tar   the image, an OCI archive (docker://, podman load, buildah push read it)
  chronos-image-VERSION.digest    its manifest's digest (sha256:...), for the chart's image.digest
--base-cache DIR: keep the Debian base's root filesystem in DIR and use it again for a day (default: made anew,
with the day's security updates, every build).
Environment: CHRONOS_BUILD_CA  a CA bundle for an HTTPS proxy to PyPI (default: the system's bundle, if any);
             CHRONOS_DEBIAN_MIRROR  a Debian mirror (default: http://deb.debian.org).
EOF
}

out=dist
base_cache=""
while (($#)); do
  case "$1" in
    --out) [ $# -ge 2 ] || { echo "error: --out needs a directory" >&2; exit 2; }; out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --base-cache) [ $# -ge 2 ] || { echo "error: --base-cache needs a directory" >&2; exit 2; }; base_cache="$2"; shift 2 ;;
    --base-cache=*) base_cache="${1#--base-cache=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

[ "$(id -u)" = 0 ] || { echo "error: building the image needs root here (mmdebstrap and buildah build in chroots)" >&2; exit 1; }
for tool in mmdebstrap buildah; do
  command -v "$tool" >/dev/null 2>&1 || { echo "error: $tool is not installed (bash scripts/setup.sh installs it)" >&2; exit 1; }
done
[ -x .venv/bin/python ] || { echo "error: no .venv here: run bash scripts/setup.sh first" >&2; exit 1; }

# The reference the chart pulls by default, and chronos's version (which the chart's appVersion must be).
read -r repository version app_version < <(.venv/bin/python - <<'EOF'
import tomllib, yaml
values = yaml.safe_load(open("helm/chronos/values.yaml"))
chart = yaml.safe_load(open("helm/chronos/Chart.yaml"))
print(values["image"]["repository"], tomllib.load(open("pyproject.toml", "rb"))["project"]["version"], chart["appVersion"])
EOF
)
[ "$version" = "$app_version" ] || { echo "error: chronos is $version but the chart's appVersion is $app_version" >&2; exit 1; }
ref="$repository:$version"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
archive="$out/chronos-image-$version.oci.tar"
digest_file="$out/chronos-image-$version.digest"

work="$(mktemp -d /var/tmp/chronos-image.XXXXXX)"
# The kernel's overlay filesystem where it works (a layer is not copied whole per step: a third less time than vfs
# here), else vfs (inside a container whose own root is an overlay, say).
storage=(--root "$work/storage" --runroot "$work/run" --storage-driver overlay)
buildah "${storage[@]}" info >/dev/null 2>&1 || storage=(--root "$work/vfs" --runroot "$work/run" --storage-driver vfs)
cleanup() {
  buildah "${storage[@]}" rm --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf '%5d s  %s\n' "$SECONDS" "$*"; }

mirror="${CHRONOS_DEBIAN_MIRROR:-http://deb.debian.org}"
# No documentation, manuals or translations (copyright files stay); mmdebstrap leaves no apt lists or caches.
debootstrap=(mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates,passwd
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias'
  bookworm "$work/base.tar"
  "deb $mirror/debian bookworm main" "deb $mirror/debian bookworm-updates main"
  "deb $mirror/debian-security bookworm-security main")
cached=""
if [ -n "$base_cache" ]; then
  mkdir -p "$base_cache"
  cached="$base_cache/bookworm-$(printf '%s\n' "${debootstrap[@]}" | sed "s|$work|WORK|" | sha256sum | cut -c1-16).tar"
fi
if [ -n "$cached" ] && [ -n "$(find "$cached" -mmin -1440 2>/dev/null)" ]; then
  step "base: Debian 12 (bookworm) minbase, made $(( ($(date +%s) - $(stat -c %Y "$cached")) / 60 )) min ago ($cached)"
  cp "$cached" "$work/base.tar"
else
  step "base: Debian 12 (bookworm) minbase with python3, python3-venv, ca-certificates, passwd (mmdebstrap)"
  "${debootstrap[@]}"
  if [ -n "$cached" ]; then cp "$work/base.tar" "$cached.partial" && mv "$cached.partial" "$cached"; fi
fi
base="localhost/chronos-base:bookworm"
container="$(buildah "${storage[@]}" from scratch)"
buildah "${storage[@]}" add --quiet "$container" "$work/base.tar" / >/dev/null
buildah "${storage[@]}" commit --quiet --rm "$container" "$base" >/dev/null
rm -f "$work/base.tar"

step "image: image/Containerfile on it (buildah, chroot isolation, the host's network for PyPI)"
ca="${CHRONOS_BUILD_CA:-/etc/ssl/certs/ca-certificates.crt}"
secret=(); [ -s "$ca" ] && secret=(--secret "id=build-ca,src=$ca")
buildah "${storage[@]}" build --quiet --isolation chroot --network host --pull=never "${secret[@]}" \
  --build-arg "BASE=$base" --build-arg "VERSION=$version" -f image/Containerfile -t "$ref" . >/dev/null

step "archive: $archive"
rm -f "$archive" "$digest_file"
buildah "${storage[@]}" push --quiet --digestfile "$digest_file" "$ref" "oci-archive:$archive:$ref"
step "done: $ref, $(du -m "$archive" | cut -f1) MB archive, digest $(cat "$digest_file")"
echo "push it: buildah push oci-archive:$archive:$ref docker://REGISTRY/chronos:$version"
