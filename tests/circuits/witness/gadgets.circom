pragma circom 2.0.0;

// circomlib gadgets whose witnesses use hints, lookups and asserts:
// comparators, Num2Bits/Bits2Num, Mux2, MiMC7, MiMCSponge, Pedersen and
// Baby Jubjub point addition (with its on-curve check).
include "circomlib/circuits/comparators.circom";
include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/mux2.circom";
include "circomlib/circuits/mimc.circom";
include "circomlib/circuits/mimcsponge.circom";
include "circomlib/circuits/pedersen.circom";
include "circomlib/circuits/babyjub.circom";

template Gadgets() {
    signal input a;
    signal input b;
    signal input s[2];
    signal input c[4];
    signal input bits[10];
    signal input p1[2];
    signal input p2[2];
    signal output lt;
    signal output eq;
    signal output z;
    signal output n;
    signal output m;
    signal output mimc;
    signal output sponge[2];
    signal output ped[2];
    signal output sum[2];

    component l = LessThan(16);
    l.in[0] <== a;
    l.in[1] <== b;
    lt <== l.out;
    component e = IsEqual();
    e.in[0] <== a;
    e.in[1] <== b;
    eq <== e.out;
    component iz = IsZero();
    iz.in <== a;
    z <== iz.out;
    component nb = Num2Bits(16);
    nb.in <== a;
    component bn = Bits2Num(16);
    for (var i = 0; i < 16; i++) {
        bn.in[i] <== nb.out[i];
    }
    n <== bn.out;
    component mx = Mux2();
    mx.s[0] <== s[0];
    mx.s[1] <== s[1];
    for (var i = 0; i < 4; i++) {
        mx.c[i] <== c[i];
    }
    m <== mx.out;

    component m7 = MultiMiMC7(2, 91);
    m7.in[0] <== a;
    m7.in[1] <== b;
    m7.k <== c[0];
    mimc <== m7.out;
    component ms = MiMCSponge(2, 220, 2);
    ms.ins[0] <== a;
    ms.ins[1] <== b;
    ms.k <== c[1];
    sponge[0] <== ms.outs[0];
    sponge[1] <== ms.outs[1];
    component pd = Pedersen(10);
    for (var i = 0; i < 10; i++) {
        pd.in[i] <== bits[i];
    }
    ped[0] <== pd.out[0];
    ped[1] <== pd.out[1];
    component check = BabyCheck();
    check.x <== p1[0];
    check.y <== p1[1];
    component add = BabyAdd();
    add.x1 <== p1[0];
    add.y1 <== p1[1];
    add.x2 <== p2[0];
    add.y2 <== p2[1];
    sum[0] <== add.xout;
    sum[1] <== add.yout;
}

component main {public [a]} = Gadgets();
