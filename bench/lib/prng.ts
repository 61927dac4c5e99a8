/**
 * mulberry32 (Tommy Ettinger's 32-bit generator): a seeded PRNG for generated data and randomised
 * tests, so a run is reproducible from its seed. Not for anything secret.
 * @returns a function giving floats in [0, 1), the same sequence for the same seed
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
