// Compiled by test/types.test.js beside types-check.ts: where a global `Buffer` is declared (as
// @types/node declares it, reduced here to what matters), image bytes are typed as that Buffer.
import type { Delivered, Bytes } from '../index.js';

interface NodeLikeBuffer extends Uint8Array {
  toString(encoding?: 'base64' | 'utf8'): string;
}
declare global {
  var Buffer: { alloc(size: number, fill?: number): NodeLikeBuffer };
}

declare const image: Delivered;
const bytes: NodeLikeBuffer | undefined = image.data;
const text: string | undefined = image.data?.toString('base64');
const same: NodeLikeBuffer = null as unknown as Bytes;
export { bytes, text, same };
