pragma circom 2.0.0;

include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";

// Compiled with --prime bls12381: circomlib's Num2Bits and LessThan on the
// BLS12-381 scalar field.
template Bits() {
    signal input x;
    signal input y;
    signal output lt;
    signal output low;
    component bx = Num2Bits(64);
    bx.in <== x;
    component cmp = LessThan(64);
    cmp.in[0] <== x;
    cmp.in[1] <== y;
    lt <== cmp.out;
    low <== bx.out[0] + 2 * bx.out[1];
}

component main {public [y]} = Bits();
