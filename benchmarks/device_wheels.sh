#!/usr/bin/env bash
# Everything a lent GPU machine needs from us, in .whl/ (ignored by git), for the device scripts
# (benchmarks/*/device/*.sh). Run on the build machine (this repo, with Pants, pip and
# the package index reachable), from the repo root:
#
#   bash benchmarks/device_wheels.sh [--check] [core] [scipy] [triton]     # none named: all three
#
#   core    .whl/*.whl, which device_lib.sh's install_wheels installs for every device script, all
#           for CPython 3.12 on Linux x86-64: our native module (built by
#           `./pants py312 package src/cpp/harness_native:dist`), mlcommons-loadgen and tqdm, and
#           tokenizers (BERT's) and nibabel (3D-UNet's)
#   scipy   .whl/optional/scipy-*.whl: 3D-UNet's script installs it where the machine has no scipy
#   triton  .whl/triton/triton-cp312.tar.xz: benchmarks/triton_bundle.sh's bundle (PyTriton,
#           tritonclient and their closure) for benchmarks/resnet50/device/triton.sh
#   diffusers .whl/diffusers/*.whl (only when named): diffusers, transformers and their closure for
#           benchmarks/sdxl/device/gpu_scenarios.sh, pinned in gpu_constraints.txt and constraints.txt
#
# Every version is the pin in 3rdparty/python/constraints.txt. What is already there at its pin is
# kept, a stale version is replaced, and a second version of one package never stays (two stop the
# whole install there). The native module is always built by Pants (a cache hit when its sources
# have not changed) and replaces the one in .whl/ only where the bytes differ. The Triton bundle
# is rebuilt when a wheel in it (its wheels.txt) is no longer at its pin or triton_bundle.sh has
# changed. Downloads land in .whl/.partial/ and are renamed into place whole. Each failure prints
# one line (`device_wheels: FAILED ...`), the rest still run, and the exit code is 1.
# --check: only says what a run would do (nothing is built or fetched); exit code 1 where
# anything is missing or stale. At the end: what each device script's call should carry (the
# device tool's `carry`; a call carries 64 MiB in all, so not the whole of .whl/ when it holds the
# Triton bundle). docs/deploy.md.
# WHEELS (default .whl) and CONSTRAINTS (default 3rdparty/python/constraints.txt) move them (the
# tests); PYTHON is the Python whose pip downloads (default python3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python="${PYTHON:-python3}"
wheels="${WHEELS:-.whl}"
constraints="${CONSTRAINTS:-3rdparty/python/constraints.txt}"
me=device_wheels
failed=0 check=0 groups=()
for arg in "$@"; do
  case "$arg" in
  --check) check=1 ;;
  core | scipy | triton | diffusers) groups+=("$arg") ;;
  *) echo "usage: bash benchmarks/device_wheels.sh [--check] [core] [scipy] [triton] [diffusers]" >&2; exit 2 ;;
  esac
done
[ ${#groups[@]} -gt 0 ] || groups=(core scipy triton)

fail() { echo "$me: FAILED $*"; failed=1; }
say() { echo "$me: $*"; }
norm() { echo "$1" | tr '[:upper:]' '[:lower:]' | sed -E 's/[-_.]+/_/g'; }  # a distribution's name, as compared

pin() {  # $1: a distribution. Its version pinned (==) in constraints.txt (or, for GPU-host-only
  # packages, gpu_constraints.txt beside it, where there is one); empty where none is
  local files=("$constraints") gpu
  gpu="$(dirname "$constraints")/gpu_constraints.txt"
  [ ! -f "$gpu" ] || files+=("$gpu")
  awk -v want="$(norm "$1")" '
    { sub(/#.*/, ""); gsub(/[[:space:]]/, ""); split($0, f, "==") }
    f[2] != "" { name = tolower(f[1]); gsub(/[-_.]+/, "_", name); if (name == want) { print f[2]; exit } }
  ' "${files[@]}"
}

field() {  # $1: a wheel's file name, $2: which field (0 name, 1 version, -3 python, -2 abi, -1 platform)
  local IFS=- f
  read -r -a f <<<"$(basename "${1%.whl}")"
  echo "${f[$2]}"
}

fits() {  # $1: a wheel's file name. True where it installs on CPython 3.12, Linux x86-64
  local py abi plat tag ok=0
  py=".$(field "$1" -3)." abi=$(field "$1" -2) plat=".$(field "$1" -1)."
  case "$plat" in *.any.* | *linux*_x86_64.*) ;; *) return 1 ;; esac
  case "$abi" in
  cp312) [[ "$py" == *.cp312.* ]] ;;
  abi3)  # a stable-ABI wheel for CPython 3.2 .. 3.12
    for tag in ${py//./ }; do
      [[ "$tag" =~ ^cp3([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -le 12 ] && ok=1
    done
    [ "$ok" = 1 ] ;;
  none) [[ "$py" == *.py3.* || "$py" == *.py312.* || "$py" == *.cp312.* ]] ;;
  *) return 1 ;;
  esac
}

held() {  # $1: a folder, $2: a distribution. Its wheels there, one a line
  local file want
  want="$(norm "$2")"
  for file in "$1"/*.whl; do
    [ -f "$file" ] && [ "$(norm "$(field "$file" 0)")" = "$want" ] && echo "$file"
  done
  return 0
}

prune() {  # $1: a folder in .whl/, $2: a distribution, $3: its wheel there. Removes its others
  local old
  for old in $(held "$1" "$2"); do
    [ "$old" = "$3" ] || { rm -f "$old"; say "$2: removed $(basename "$old")"; }
  done
}

place() {  # $1: a file under .whl/.partial, $2: its folder in .whl/, $3: the distribution. Renames it
  # into place whole (one file system: no half-written wheel is ever seen), then prunes
  local new
  new="$2/$(basename "$1")"
  mkdir -p "$2"
  mv -f "$1" "$new"
  prune "$2" "$3" "$new"
}

staged() {  # $1: a folder. Its one .whl (pip or Pants wrote it there); fails where not one
  local found=("$1"/*.whl)
  [ ${#found[@]} = 1 ] && [ -f "${found[0]}" ] && echo "${found[0]}"
}

log_of() {  # $1: a name. Where its build or download log is kept on failure (outside .whl/)
  echo "${TMPDIR:-/tmp}/$me-$1.log"
}

last_error() {  # $1: a log. Its last ERROR line, else its last line
  { grep -E '^ERROR|[Ee]rror:' "$1" || grep -v '^[[:space:]]*$' "$1" || echo "(no output)"; } | tail -1 | cut -c1-200
}

fetch() {  # $1: a distribution, $2: its folder in .whl/. At its pin, from the package index
  local name="$1" dir="$2" version keep="" file stale=()
  version="$(pin "$name")"
  [ -n "$version" ] || { fail "$name: no $name== pin in $constraints"; return 0; }
  for file in $(held "$dir" "$name"); do
    if [ -z "$keep" ] && [ "$(field "$file" 1)" = "$version" ] && fits "$file"; then
      keep="$file"
    else
      stale+=("$file")
    fi
  done
  if [ -n "$keep" ]; then
    say "$name $version: up to date ($(basename "$keep"))"
    for file in "${stale[@]}"; do
      if [ "$check" = 1 ]; then fail "$name $version: $(basename "$file") is stale (a run removes it)"
      else rm -f "$file"; say "$name: removed $(basename "$file")"; fi
    done
    return 0
  fi
  if [ "$check" = 1 ]; then
    fail "$name $version: missing${stale[*]:+ (stale: $(for f in "${stale[@]}"; do basename "$f"; done | paste -sd " "))}"
    return 0
  fi
  local into="$partial/$name" log
  log="$(log_of "$name")"
  mkdir -p "$into"
  if ! "$python" -m pip download --disable-pip-version-check --no-deps "${target[@]}" \
    -d "$into" "$name==$version" >"$log" 2>&1 9>&-; then
    fail "$name $version: pip download failed: $(last_error "$log") (log: $log)"; return 0
  fi
  if ! file="$(staged "$into")" || ! fits "$file" || [ "$(field "$file" 1)" != "$version" ]; then
    fail "$name $version: pip gave no single CPython 3.12 x86-64 wheel of it: $(find "$into" -mindepth 1 -maxdepth 1 -printf '%f ') (log: $log)"
    return 0
  fi
  place "$file" "$dir" "$name"
  rm -f "$log"
  say "$name $version: downloaded $(basename "$file")"
}

native() {  # our native module, built by Pants for CPython 3.12, into .whl/
  local old file into="$partial/native" log name=mlperf_harness_native
  old="$(held "$wheels" "$name" | head -1)"
  if [ "$check" = 1 ]; then
    if [ -n "$old" ] && fits "$old"; then say "$name: present ($(basename "$old"); a run rebuilds it through Pants)"
    else fail "$name: missing"; fi
    return 0
  fi
  log="$(log_of native)"
  if ! ./pants py312 --pants-distdir="$into" package src/cpp/harness_native:dist >"$log" 2>&1 9>&-; then
    fail "$name: ./pants py312 package src/cpp/harness_native:dist failed: $(last_error "$log") (log: $log)"
    return 0
  fi
  if ! file="$(staged "$into")" || ! fits "$file"; then
    fail "$name: Pants built no single CPython 3.12 x86-64 wheel: $(find "$into" -mindepth 1 -maxdepth 1 -printf '%f ') (log: $log)"
    return 0
  fi
  rm -f "$log"
  if [ -n "$old" ] && [ "$(basename "$old")" = "$(basename "$file")" ] && cmp -s "$old" "$file"; then
    say "$name: up to date ($(basename "$old"), as Pants builds it now)"
    prune "$wheels" "$name" "$old"
  else
    place "$file" "$wheels" "$name"
    say "$name: built $(basename "$file")"
  fi
}

recipe() {  # the bundle's recipe, comments aside: its script and the platform flags it sources
  grep -hv '^[[:space:]]*#' benchmarks/triton_bundle.sh benchmarks/cp312_wheel_target.sh | sha256sum | cut -d' ' -f1
}

bundle_stale() {  # Why .whl/triton is not current (one line), or nothing where it is
  local dir="$wheels/triton" file name version pinned
  if [ ! -f "$dir/triton-cp312.tar.xz" ] || [ ! -f "$dir/wheels.txt" ]; then echo "missing"; return 0; fi
  [ "$(cat "$dir/recipe.sha256" 2>/dev/null)" = "$(recipe)" ] || { echo "benchmarks/triton_bundle.sh changed (or its platform flags)"; return 0; }
  if ! grep -q '^nvidia_pytriton-' "$dir/wheels.txt" || ! grep -q '^tritonclient-' "$dir/wheels.txt"; then
    echo "its wheels.txt lacks nvidia_pytriton or tritonclient"; return 0
  fi
  while read -r file; do
    name="$(field "$file" 0)" version="$(field "$file" 1)" pinned="$(pin "$name")"
    if [ -n "$pinned" ] && [ "$pinned" != "$version" ]; then
      echo "it holds $name $version, pinned $pinned"; return 0
    fi
  done <"$dir/wheels.txt"
}

triton() {  # benchmarks/triton_bundle.sh's bundle, into .whl/triton
  local why into="$partial/triton" log
  why="$(bundle_stale)"
  if [ -z "$why" ]; then
    say "triton bundle: up to date ($wheels/triton: $(wc -l <"$wheels/triton/wheels.txt") wheels at their pins)"
    return 0
  fi
  if [ "$check" = 1 ]; then fail "triton bundle: $why"; return 0; fi
  say "triton bundle: building ($why; several minutes)"
  log="$(log_of triton)"
  if ! TRITON_BUNDLE_DIR="$into" PYTHON="$python" bash benchmarks/triton_bundle.sh >"$log" 2>&1 9>&-; then
    fail "triton bundle: benchmarks/triton_bundle.sh failed: $(last_error "$log") (log: $log)"
    return 0
  fi
  recipe >"$into/recipe.sha256"
  rm -rf "$partial/triton.old"
  [ ! -e "$wheels/triton" ] || mv "$wheels/triton" "$partial/triton.old"
  mv "$into" "$wheels/triton"
  rm -rf "$partial/triton.old"
  rm -f "$log"
  say "triton bundle: built $wheels/triton/triton-cp312.tar.xz ($(wc -l <"$wheels/triton/wheels.txt")" \
    "wheels; $(mib "$wheels/triton/triton-cp312.tar.xz"))"
}

mib() { du -cb "$@" 2>/dev/null | tail -1 | awk '{ printf "%.1f MiB", $1 / 1048576 }'; }
json() { local sep="" p; printf '['; for p in "$@"; do printf '%s"%s"' "$sep" "$p"; sep=", "; done; printf ']'; }

carry() {  # what each device script's call carries (the device tool's carry list), and its size
  local core=("$wheels"/*.whl) three=() file
  [ -f "${core[0]}" ] || return 0
  for file in "${core[@]}"; do
    case "$(norm "$(field "$file" 0)")" in mlcommons_loadgen | mlperf_harness_native | tqdm) three+=("$file") ;; esac
  done
  echo "carry for gpu_scenarios.sh, scaling.sh ($(mib "${core[@]}")): $(json "${core[@]}")"
  if [ -d "$wheels/optional" ]; then
    echo "  3d-unet's on a machine without scipy, also ($(mib "$wheels/optional")): $(json "$wheels/optional")"
  fi
  if [ -d "$wheels/triton" ]; then
    echo "carry for triton.sh ($(mib "${three[@]}" "$wheels/triton")): $(json "${three[@]}" "$wheels/triton")"
  fi
}

source "$(dirname "${BASH_SOURCE[0]}")/cp312_wheel_target.sh"  # sets `target`

[ -f "$constraints" ] || { echo "$me: FAILED no $constraints"; exit 1; }
partial="$wheels/.partial"
if [ "$check" = 0 ]; then
  mkdir -p "$wheels"
  exec 9>"$wheels/.lock"  # closed for every command started below: pantsd would keep it
  if command -v flock >/dev/null && ! flock -n 9; then
    echo "$me: FAILED another device_wheels.sh is filling $wheels"; exit 1
  fi
  rm -rf "$partial"  # what a run killed outright left
  trap 'rm -rf "$partial"' EXIT
  mkdir -p "$partial"
fi
start=$SECONDS
for group in "${groups[@]}"; do
  case "$group" in
  core)
    native
    for name in mlcommons-loadgen tqdm tokenizers nibabel; do fetch "$name" "$wheels"; done
    ;;
  scipy) fetch scipy "$wheels/optional" ;;
  diffusers)  # SDXL's GPU engine: diffusers, transformers and what torch's host lacks of their closure
    for name in diffusers transformers safetensors huggingface_hub httpx2 httpcore2 truststore h11 anyio hf-xet \
      requests charset_normalizer idna urllib3 certifi regex PyYAML packaging filelock fsspec typer click \
      rich shellingham annotated-doc markdown-it-py mdurl Pygments typing_extensions pillow; do
      fetch "$name" "$wheels/diffusers"
    done ;;
  triton) triton ;;
  esac
done
if [ "$check" = 0 ]; then say "done in $((SECONDS - start)) s$([ "$failed" = 0 ] || echo ", with failures")"; fi
carry
exit "$failed"
