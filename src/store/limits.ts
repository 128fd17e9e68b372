// Bounds every backend keeps alike.

/**
 * The most an account balance may hold: 10 billion USD in quota, well inside exact integers
 * (2^53 ≈ 9.007e15), so a top-up is never rounded away.
 */
export const MAX_BALANCE = 5e15;
