pragma circom 2.0.0;

include "circomlib/circuits/poseidon.circom";

// circomlib's Poseidon over three inputs; the hash is public, one input too.
template PoseidonPreimage() {
    signal input preimage[3];
    signal input salt;
    signal output hash;
    component h = Poseidon(4);
    for (var i = 0; i < 3; i++) {
        h.inputs[i] <== preimage[i];
    }
    h.inputs[3] <== salt;
    hash <== h.out;
}

component main {public [salt]} = PoseidonPreimage();
