// Certificate serial numbers, apart so that a test can draw many without generating keys.
import { randomBytes } from 'node:crypto';

/**
 * A positive serial of 16 bytes whose first byte is 0x40 to 0x7f: the top bit clear so DER does not
 * read it as negative, and never 0x00, which DER forbids as a leading byte (node-forge writes the hex as
 * given, and OpenSSL then refused the certificate with "illegal padding": once in 64 generations,
 * with two serials each). 126 random bits.
 */
export function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x3f) | 0x40;
  return bytes.toString('hex');
}
