pragma circom 2.0.0;

// circomlib's EdDSA-Poseidon signature check on Baby Jubjub (eddsa_input.json
// holds a valid signature of M = 42: A = a*B8, R8 = r*B8, S = r + 8*h*a mod l).
include "circomlib/circuits/eddsaposeidon.circom";

component main {public [Ax, Ay, M]} = EdDSAPoseidonVerifier();
