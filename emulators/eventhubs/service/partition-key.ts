/**
 * Partition key → partition id, as Event Hubs computes it: Bob Jenkins' lookup3 `hashlittle2` over the
 * key's UTF-8 bytes, the two 32-bit results XOR-ed and cast to a signed 16-bit integer, then taken
 * modulo the partition count. The SDK's buffered producer predicts partitions with the same function,
 * so events keyed alike land where clients expect them.
 */
const rot = (x: number, k: number) => (x << k) | (x >>> (32 - k));

function hashlittle2(data: Buffer): { b: number; c: number } {
  let a = (0xdeadbeef + data.length) | 0;
  let b = a;
  let c = a;
  let i = 0;
  let size = data.length;
  for (; size > 12; size -= 12, i += 12) {
    a = (a + data.readInt32LE(i)) | 0;
    b = (b + data.readInt32LE(i + 4)) | 0;
    c = (c + data.readInt32LE(i + 8)) | 0;
    a = (a - c) | 0;
    a ^= rot(c, 4);
    c = (c + b) | 0;
    b = (b - a) | 0;
    b ^= rot(a, 6);
    a = (a + c) | 0;
    c = (c - b) | 0;
    c ^= rot(b, 8);
    b = (b + a) | 0;
    a = (a - c) | 0;
    a ^= rot(c, 16);
    c = (c + b) | 0;
    b = (b - a) | 0;
    b ^= rot(a, 19);
    a = (a + c) | 0;
    c = (c - b) | 0;
    c ^= rot(b, 4);
    b = (b + a) | 0;
  }
  if (size === 0) return { b: b >>> 0, c: c >>> 0 };
  // The tail: up to 12 bytes, zero-padded, added little-endian to a, b, c.
  const tail = Buffer.alloc(12);
  data.copy(tail, 0, i);
  a = (a + tail.readInt32LE(0)) | 0;
  b = (b + tail.readInt32LE(4)) | 0;
  c = (c + tail.readInt32LE(8)) | 0;
  c ^= b;
  c = (c - rot(b, 14)) | 0;
  a ^= c;
  a = (a - rot(c, 11)) | 0;
  b ^= a;
  b = (b - rot(a, 25)) | 0;
  c ^= b;
  c = (c - rot(b, 16)) | 0;
  a ^= c;
  a = (a - rot(c, 4)) | 0;
  b ^= a;
  b = (b - rot(a, 14)) | 0;
  c ^= b;
  c = (c - rot(b, 24)) | 0;
  return { b: b >>> 0, c: c >>> 0 };
}

export function partitionForKey(partitionKey: string, partitionCount: number): number {
  const { b, c } = hashlittle2(Buffer.from(partitionKey, 'utf8'));
  const int16 = ((c ^ b) << 16) >> 16;
  return Math.abs(int16 % partitionCount);
}
