# Sourced by make_examples.sh and make_interop_fixtures.sh: the pinned node
# tools and the steps both use.  Phase-1 files are cached in <repo>/.cache/ptau
# under the same names the tests use (tests/conftest.py), so each is made once.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$repo/node_modules/.bin
if [[ ! -x $bin/snarkjs || ! -x $bin/circom2 ]]; then
  echo "error: $bin/snarkjs or circom2 missing: run \`npm ci\` in $repo" >&2
  exit 2
fi
snarkjs() { "$bin/snarkjs" "$@"; }
circom2() { "$bin/circom2" "$@"; }

# ptau CURVE POWER -> prints the path of a phase-2-ready powers of tau (cached)
ptau() {
  local curve=$1 power=$2 dir=$repo/.cache/ptau
  local out=$dir/${curve}_${power}.ptau
  if [[ ! -f $out ]]; then
    mkdir -p "$dir"
    local work; work=$(mktemp -d "$dir/${curve}_${power}.XXXX")
    snarkjs powersoftau new "$curve" "$power" "$work/p0.ptau" >&2
    snarkjs powersoftau contribute "$work/p0.ptau" "$work/p1.ptau" -name=scripts "-e=scripts-$curve-$power-$RANDOM$RANDOM" >&2
    snarkjs powersoftau prepare phase2 "$work/p1.ptau" "$work/p.ptau" >&2
    mv "$work/p.ptau" "$out"
    rm -rf "$work"
  fi
  echo "$out"
}

# build CIRCOM CURVE INPUT_JSON DEST POWER: compile, witness, setup (+1 contribution),
# verification key, and a snarkjs proof that snarkjs verifies; leaves in DEST:
# NAME.r1cs NAME.wasm input.json NAME.wtns NAME.zkey verification_key.json proof.json public.json
build() {
  local circuit=$1 curve=$2 input=$3 dest=$4 power=$5
  local name; name=$(basename "$circuit" .circom)
  local tmp; tmp=$(mktemp -d)
  mkdir -p "$dest"
  (cd "$repo" && circom2 "$circuit" --r1cs --wasm --prime "$curve" -l node_modules -o "$tmp" >/dev/null)
  mv "$tmp/$name.r1cs" "$dest/"
  mv "$tmp/${name}_js/$name.wasm" "$dest/"
  install -m 644 "$input" "$dest/input.json"
  snarkjs wtns calculate "$dest/$name.wasm" "$dest/input.json" "$dest/$name.wtns"
  snarkjs wtns check "$dest/$name.r1cs" "$dest/$name.wtns" >/dev/null
  local pt; pt=$(ptau "$curve" "$power")
  snarkjs groth16 setup "$dest/$name.r1cs" "$pt" "$tmp/${name}_0.zkey" >/dev/null
  snarkjs zkey contribute "$tmp/${name}_0.zkey" "$dest/$name.zkey" -name=scripts "-e=scripts-$name-$RANDOM$RANDOM" >/dev/null
  snarkjs zkey export verificationkey "$dest/$name.zkey" "$dest/verification_key.json" >/dev/null
  snarkjs groth16 prove "$dest/$name.zkey" "$dest/$name.wtns" "$dest/proof.json" "$dest/public.json"
  snarkjs groth16 verify "$dest/verification_key.json" "$dest/public.json" "$dest/proof.json" >/dev/null
  rm -rf "$tmp"
  echo "$dest: $(cd "$dest" && du -cb -- * | tail -1 | cut -f1) bytes"
}
