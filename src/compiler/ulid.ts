import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Random bytes drawn 4 KiB at a time: a batch start makes thousands of ids, and a draw each costs more than the id. */
const pool = Buffer.alloc(4096);
let drawn = pool.length;

/** A ULID: 48-bit millisecond time then 80 random bits, Crockford base32; sorts by creation time. */
export function ulid(time: number = Date.now()): string {
  let out = '';
  let t = time;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  if (drawn + 16 > pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  for (let i = 0; i < 16; i++) out += ALPHABET[pool[drawn + i] % 32];
  drawn += 16;
  return out;
}
