// Kubernetes resource quantities ("500m", "1.5Gi", "1e3"), parsed exactly enough to add and compare
// them the way the QoS computation does. Values are kept as BigInt nano-units, rounded up like
// resource.Quantity rounds below its smallest scale.

const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:([eE])([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/;
const DECIMAL_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
/** Exponents past this are not quantities a pod can carry (Kubernetes caps values near 2^63). */
const MAX_EXPONENT = 40;

/** A quantity's value in nano-units (10^-9), or undefined when `value` is not a quantity. */
export function parseQuantity(value: unknown): bigint | undefined {
  const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof text !== 'string' || text.length > 64) return undefined;
  const match = QUANTITY.exec(text);
  if (!match) return undefined;
  const [, sign, number, exponentMark, exponent, suffix] = match;
  const [whole, fraction = ''] = number.split('.');
  let digits = BigInt((whole || '0') + fraction);
  let scale = 9 - fraction.length; // power of ten still to apply
  if (exponentMark) {
    const e = Number(exponent);
    if (Math.abs(e) > MAX_EXPONENT) return undefined;
    scale += e;
  } else if (suffix && suffix in DECIMAL_SUFFIX) {
    scale += DECIMAL_SUFFIX[suffix];
  } else if (suffix) {
    digits *= 1n << BigInt(10 * BINARY_SUFFIX[suffix]);
  }
  let nanos: bigint;
  if (scale >= 0) nanos = digits * 10n ** BigInt(scale);
  else {
    const divisor = 10n ** BigInt(-scale);
    nanos = (digits + divisor - 1n) / divisor; // round up, as Kubernetes does below 1n
  }
  return sign === '-' ? -nanos : nanos;
}

/** Why `value` is not a Kubernetes quantity, or undefined when it is one. */
export function quantityError(value: unknown): string | undefined {
  if (parseQuantity(value) !== undefined) return undefined;
  return `${JSON.stringify(value)} is not a Kubernetes quantity (like "250m", "1", "64Mi" or "1.5Gi")`;
}
