// The HTTP shell around the engine for POST /mutate: content type, body limit, decoding, encoding.
// Every failure becomes a 4xx with a message an operator can act on; nothing here can crash the process.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResolvedInjectorConfig } from '../config';
import { BadAdmissionReview, admissionReviewResponse, decodeAdmissionReview, evaluate } from '../engine';
import type { Logger } from './logger';
import type { RequestOutcome, WebhookMetrics } from './metrics';

/** Large enough for any object the apiserver stores (its etcd limit is ~1.5 MiB, requests up to 3 MiB). */
export const MAX_BODY_BYTES = 7 * 1024 * 1024;

export interface AdmissionHandlerContext {
  readonly config: () => ResolvedInjectorConfig | undefined;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly outcome: RequestOutcome,
    message: string,
  ) {
    super(message);
  }
}

function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  const type = header.split(';', 1)[0].trim().toLowerCase();
  return type === 'application/json';
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
      reject(new HttpError(413, 'too_large', `body of ${declared} bytes exceeds the limit of ${MAX_BODY_BYTES} bytes`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        done = true;
        chunks.length = 0;
        reject(new HttpError(413, 'too_large', `body exceeds the limit of ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!done) {
        done = true;
        resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
      }
    });
    req.on('error', (error) => {
      if (!done) {
        done = true;
        reject(error);
      }
    });
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown, closeConnection = false): void {
  const text = JSON.stringify(body);
  // One writeHead with all headers: cheaper than a setHeader call (and its validation) each.
  const headers: Record<string, string | number> = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) };
  if (closeConnection) headers.Connection = 'close';
  res.writeHead(status, headers).end(text);
}

/** A log field from untrusted input: strings only, bounded. */
function field(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  return value.length > 253 ? value.slice(0, 250) + '...' : value;
}

export function createAdmissionHandler(context: AdmissionHandlerContext) {
  const { metrics, logger } = context;
  return async function handleAdmission(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e9;
    let uid: string | undefined;
    let answered: { outcome: RequestOutcome; log: () => void };
    try {
      if (!isJsonContentType(req.headers['content-type'])) {
        throw new HttpError(415, 'unsupported_media_type', `Content-Type must be application/json, got ${JSON.stringify(field(req.headers['content-type']) ?? '')}`);
      }
      let body: Buffer;
      try {
        body = await readBody(req);
      } catch (error) {
        if (error instanceof HttpError) throw error;
        // The client went away mid-body: nobody to answer, and not our fault.
        throw new HttpError(400, 'aborted', `request body not received: ${(error as Error).message}`);
      }
      if (body.length === 0) throw new HttpError(400, 'bad_request', 'body is empty: expected an AdmissionReview');
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch (error) {
        // V8's message quotes part of the body, which may be a secret: say only where it broke.
        const position = /position (\d+)/.exec((error as Error).message)?.[1];
        throw new HttpError(400, 'bad_request', `body is not JSON${position ? ` (syntax error at byte ${position})` : ' (unexpected end or invalid syntax)'}`);
      }
      let review;
      try {
        review = decodeAdmissionReview(parsed);
      } catch (error) {
        if (error instanceof BadAdmissionReview) {
          uid = field(error.uid);
          throw new HttpError(400, 'bad_request', `not an AdmissionReview: ${error.message}`);
        }
        throw error;
      }
      const request = review.request;
      uid = field(request.uid);
      const config = context.config();
      if (!config) throw new HttpError(503, 'error', 'no valid injector config loaded yet');
      const result = evaluate(request, config);
      sendJson(res, 200, admissionReviewResponse(review.apiVersion, result.response));
      for (const decision of result.decisions) metrics.countInjection(decision.injection, decision.reason);
      answered = {
        outcome: result.patch.length > 0 ? 'patched' : 'unchanged',
        log: () => {
          if (logger.enabled('info')) {
            const meta = (request.object?.metadata ?? {}) as Record<string, unknown>;
            logger.log('info', 'admission', {
              uid,
              kind: field(request.kind.kind),
              namespace: field(request.namespace),
              name: field(request.name) ?? field(meta.name) ?? field(meta.generateName),
              operation: field(request.operation),
              dryRun: request.dryRun === true,
              injected: result.decisions.filter((d) => d.reason === 'injected').map((d) => d.injection),
              warnings: result.response.warnings?.length ?? 0,
              durationMs: Math.round(elapsed() * 1e6) / 1e3,
            });
          }
          if (logger.enabled('debug')) logger.log('debug', 'decisions', { uid, decisions: result.decisions, warnings: result.response.warnings });
        },
      };
    } catch (error) {
      const httpError =
        error instanceof HttpError ? error : new HttpError(500, 'error', `internal error: ${(error as Error)?.message ?? String(error)}`);
      if (!res.headersSent && !res.destroyed) {
        // After a 413 the rest of the body is still on the wire: close rather than read it.
        sendJson(res, httpError.status, { error: { code: httpError.status, message: httpError.message, uid } }, httpError.status === 413);
      }
      answered = {
        outcome: httpError.outcome,
        log: () =>
          logger.log(httpError.status >= 500 ? 'error' : 'warn', 'admission request rejected', { uid, status: httpError.status, reason: httpError.message }),
      };
    }
    metrics.countRequest(answered.outcome, elapsed());
    try {
      answered.log();
    } catch (error) {
      // Logging must never turn an answered request into a failure.
      logger.log('error', 'could not log an admission', { error: (error as Error)?.message });
    }
  };
}
