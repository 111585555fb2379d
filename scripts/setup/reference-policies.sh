#!/usr/bin/env bash
# Trains the reference RL policies that MOSAIC's configurations (examples/experiments/mosaic/)
# and the RL examples play, each once: cached in $MOSAIC_CACHE/policies/<name>-<key>/, the key
# a hash of the training file and of the trainer's and worlds' sources, so a change to any of
# them trains again. A killed training resumes from its last checkpoint on the next call.
# Links each policy directory as <project>/policies/<name> (or $MOSAIC_POLICIES_DIR/<name>),
# where the experiment files look for them.
#
#   MOSAIC_BIN              the mosaic binary (default: a release build of this checkout)
#   MOSAIC_REFERENCE_STEPS  train every policy for this many steps instead of the file's
#                           (a quick try of the whole chain; not the reference figures)
#   MOSAIC_REFERENCE_ONLY   space-separated names: train only these
#
# Prints (for eval):  MOSAIC_POLICIES=<directory of the links>
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LINKS="${MOSAIC_POLICIES_DIR:-$ROOT/policies}"

# name and training file of every reference policy.
REFERENCES=(
    "soccer-2v2-ippo examples/training/soccer-ippo.toml"
    "soccer-2v2-mappo examples/training/soccer-mappo-blue.toml"
    "soccer-2v2-mappo-reference examples/training/soccer-mappo-reference.toml"
    "soccer-solo-green examples/training/soccer-solo.toml"
    "soccer-solo-blue examples/training/soccer-solo-blue.toml"
    "doorkey examples/training/doorkey.toml"
    "coord-team examples/training/coord-team.toml"
)

if [[ -n "${MOSAIC_BIN:-}" ]]; then
    MOSAIC="$MOSAIC_BIN"
else
    log "building mosaic (release)"
    quiet reference-policies cargo build --release --bin mosaic --manifest-path "$ROOT/Cargo.toml"
    MOSAIC="${CARGO_TARGET_DIR:-$ROOT/target}/release/mosaic"
fi

# What a trained policy depends on besides its file: the trainer and the worlds.
sources_key() {
    if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$ROOT" ls-files -s actors/rl core adapters/worlds | sha256sum | cut -c1-12
    else
        find "$ROOT/actors/rl" "$ROOT/core" "$ROOT/adapters/worlds" -type f -name '*.rs' -print0 \
            | sort -z | xargs -0 cat | sha256sum | cut -c1-12
    fi
}
SOURCES=$(sources_key)

train_one() {
    local name=$1 file="$ROOT/$2" training dir key
    training=$(mktemp --suffix .toml)
    if [[ -n "${MOSAIC_REFERENCE_STEPS:-}" ]]; then
        sed "s/^total_steps = .*/total_steps = $MOSAIC_REFERENCE_STEPS/" "$file" >"$training"
    else
        cp "$file" "$training"
    fi
    key=$( (cat "$training"; echo "$SOURCES") | sha256sum | cut -c1-12)
    dir="$MOSAIC_CACHE/policies/$name-$key"
    if [[ ! -f "$dir/.complete" ]]; then
        mkdir -p "$dir"
        if [[ -d "$dir/run" ]]; then
            log "$name: resuming its training ($dir)"
            quiet "train-$name" "$MOSAIC" train --resume "$dir/run" --progress false
        else
            log "$name: training ($2; cached in $dir)"
            quiet "train-$name" "$MOSAIC" train "$training" --out "$dir" --run-id run --progress false
        fi
        touch "$dir/.complete"
    fi
    rm -f "$training"
    mkdir -p "$LINKS"
    ln -sfn "$dir/run/policies" "$LINKS/$name"
}

for reference in "${REFERENCES[@]}"; do
    read -r name file <<<"$reference"
    if [[ -n "${MOSAIC_REFERENCE_ONLY:-}" && " $MOSAIC_REFERENCE_ONLY " != *" $name "* ]]; then
        continue
    fi
    with_lock "policy-$name" train_one "$name" "$file"
done
echo "MOSAIC_POLICIES=$LINKS"
