pragma circom 2.0.0;

include "circomlib/circuits/poseidon.circom";

// A Poseidon Merkle path of depth 72: over 2^14 constraints, the size class
// the witness benchmark and the byte-identity test use.
template MerklePath(depth) {
    signal input leaf;
    signal input pathElements[depth];
    signal input pathIndices[depth];
    signal output root;

    component hashers[depth];
    signal cur[depth + 1];
    signal d[depth];
    cur[0] <== leaf;
    for (var i = 0; i < depth; i++) {
        pathIndices[i] * (1 - pathIndices[i]) === 0;
        d[i] <== pathIndices[i] * (pathElements[i] - cur[i]);
        hashers[i] = Poseidon(2);
        hashers[i].inputs[0] <== cur[i] + d[i];
        hashers[i].inputs[1] <== pathElements[i] - d[i];
        cur[i + 1] <== hashers[i].out;
    }
    root <== cur[depth];
}

component main = MerklePath(72);
