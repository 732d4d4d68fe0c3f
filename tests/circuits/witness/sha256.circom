pragma circom 2.0.0;

// circomlib's SHA-256 of a 16-bit message (one block, ~30k constraints).
include "circomlib/circuits/sha256/sha256.circom";

template Sha() {
    signal input in[16];
    signal output out[256];
    component s = Sha256(16);
    for (var i = 0; i < 16; i++) {
        s.in[i] <== in[i];
    }
    for (var i = 0; i < 256; i++) {
        out[i] <== s.out[i];
    }
}

component main = Sha();
