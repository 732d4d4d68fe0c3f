pragma circom 2.0.0;

// Several public signals: two outputs, then one public input (nPublic = 3,
// like examples/: the two are each other's "another circuit" in the tests).
// Private input c appears only in B (so its A point is infinity), and the
// A side of the first constraint has a -1 coefficient (a - b).
template SeveralPublic() {
    signal input x;     // public
    signal input y;
    signal input a;
    signal input b;
    signal input c;     // used only as the right factor of a product
    signal output prod;
    signal output mix;
    signal t;
    t <== (a - b) * c;
    prod <== t * x;
    mix <== (a + y) * (b + 3);
}

component main {public [x]} = SeveralPublic();
