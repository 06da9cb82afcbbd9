/**
 * `braid/http`: what an HTTP handler's endpoint needs — the request braid sends, and the check of its
 * `braid-signature` header (see docs/http-handlers.md for the algorithm in other languages).
 */
export type { HttpTaskRequest } from './runtime/worker/http-handler.js';
export { DEFAULT_TOLERANCE_S, SIGNATURE_HEADER, type SignatureCheck, signBody, verifySignature } from './runtime/worker/http-signature.js';
