// The HTTP shell around the engine for POST /mutate: content type, body limit, memory budget,
// decoding, encoding. Every failure becomes a 4xx with a message an operator can act on; nothing here
// can crash the process.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants as http2Constants } from 'node:http2';
import { type AdmissionRoute, JSON_WORST_BUDGET_PER_BODY_BYTE, SMALL_BODY_BYTES, UNSCANNED_BODY_BYTES, type ResolvedInjectorConfig } from '../config';
import { AdmissionRequest, AdmissionReview, BadAdmissionReview, decodeAdmissionReview } from '../engine';
import { reviewBytes } from './review-text';
import { http2StreamOf } from './connection-table';
import type { Logger } from './logger';
import { type MemoryBudget, JsonShapeScanner } from './memory-budget';
import type { RequestOutcome, WebhookMetrics } from './metrics';
import type { NamespaceDefaultsTable } from './namespace-defaults';
import { type Answered, RepeatedReviews, type UidSpan, requestIsNamed, requestUidSpan, reviewKey, uidIsSpan } from './repeated-reviews';

import { evaluateRoute } from './admission-routes';
import { AnswerTexts } from './answer-texts';
import { admissionLogFields, admissionLogWriter, field, requestLogFields } from './admission-log';

/** Large enough for any object the apiserver stores (its etcd limit is ~1.5 MiB, requests up to 3 MiB). */
export const MAX_BODY_BYTES = 7 * 1024 * 1024;
/** Seconds a shed client is asked to wait (the apiserver itself does not retry; other clients may). */
export const SHED_RETRY_AFTER_SECONDS = 1;

export interface AdmissionHandlerContext {
  readonly config: () => ResolvedInjectorConfig | undefined;
  /** The namespaces' override defaults, when the config reads any (`fromNamespace`). */
  readonly namespaces?: NamespaceDefaultsTable;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
  readonly budget: MemoryBudget;
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

/** One admission request on its way from its body to its answer. */
interface Admission {
  readonly res: ServerResponse;
  readonly started: number;
  /** Body bytes held in the memory budget until the answer is sent. */
  readonly held: number;
  /** Until it is parsed. */
  body: Buffer | undefined;
  uid: string | undefined;
  review: (AdmissionReview & { request: AdmissionRequest }) | undefined;
  /** A small body's uid span and key (repeated-reviews.ts), when it has them; `remember` once its
   * parsed uid is known to be the span's. */
  span: UidSpan | undefined;
  key: string | undefined;
  remember: boolean;
  /** The answer kept for the review this one repeats, if the config has not changed since (checked
   * when evaluating; the body is kept until then). */
  repeats: Answered | undefined;
  answered: Answered | undefined;
  answer: { text: string; bytes: number } | undefined;
  /** Set by the first stage that fails: the request is refused with it. */
  error: HttpError | undefined;
  /** Which config answers it: the path the webhook entry calls (admissionRoute). */
  readonly route: AdmissionRoute;
}

function asHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  let message: string;
  try {
    message = String((error as Error)?.message ?? error);
  } catch {
    message = 'an error that cannot be described';
  }
  return new HttpError(500, 'error', `internal error: ${message}`);
}

function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  // The common case without a split: "application/json" exactly.
  if (header === 'application/json') return true;
  const type = header.split(';', 1)[0].trim().toLowerCase();
  return type === 'application/json';
}

const JSON_HEADERS = (length: number): Record<string, string | number> => ({ 'Content-Type': 'application/json', 'Content-Length': length });

function sendText(res: ServerResponse, status: number, text: string, extraHeaders?: Record<string, string | number>, bytes = Buffer.byteLength(text)): void {
  // A request pipelined behind one not yet answered has no socket yet. Its answer is written when it
  // gets one, not buffered in the response: Node pauses a connection's parser once 16 KiB of such
  // answers wait, and a TLS connection's parser then still receives the bytes TLS had decrypted and
  // fails with 'Parse Error: Paused' (2,000 pipelined requests got 18-33 answers, then a reset).
  if (res.socket === null && !res.destroyed) {
    res.once('socket', () => sendText(res, status, text, extraHeaders, bytes));
    return;
  }
  // One writeHead with all headers: cheaper than a setHeader call (and its validation) each.
  const headers = JSON_HEADERS(bytes);
  if (extraHeaders) Object.assign(headers, extraHeaders);
  res.writeHead(status, headers).end(text);
}


export function createAdmissionHandler(context: AdmissionHandlerContext) {
  const { metrics, logger, budget } = context;
  const answers = new AnswerTexts();
  const repeated = new RepeatedReviews();
  const admissionLogMembers = admissionLogWriter();

  /** Answers a request that was decoded, evaluated or refused; counts it and logs it. */
  function finish(started: number, held: number, outcome: RequestOutcome, log: ((elapsedMs: number) => void) | undefined): void {
    if (held > 0) budget.release(held);
    const elapsedMs = performance.now() - started;
    metrics.countRequest(outcome, elapsedMs / 1000);
    if (!log) return;
    try {
      log(elapsedMs);
    } catch (error) {
      // Logging must never turn an answered request into a failure.
      logger.log('error', 'could not log an admission', { error: (error as Error)?.message });
    }
  }

  function reject(res: ServerResponse, started: number, held: number, error: HttpError, uid: string | undefined, closeConnection: boolean, headers?: Record<string, string | number>): void {
    if (!res.headersSent && !res.destroyed) {
      const text = JSON.stringify({ error: { code: error.status, message: error.message, uid } });
      // After a refusal before the body, the rest of it is still on the wire: close rather than read
      // it. HTTP/2 has no Connection header: the stream is reset (NO_ERROR) once the answer is out.
      const stream = http2StreamOf(res);
      sendText(res, error.status, text, closeConnection && stream === undefined ? { ...headers, Connection: 'close' } : headers);
      if (closeConnection && stream !== undefined && !stream.destroyed) stream.close(http2Constants.NGHTTP2_NO_ERROR);
    }
    finish(started, held, error.outcome, () =>
      logger.log(error.status >= 500 ? 'error' : 'warn', error.outcome === 'shed' ? 'admission request shed' : 'admission request rejected', {
        uid,
        status: error.status,
        reason: error.message,
      }),
    );
  }

  /** Reads the body into an AdmissionReview (stage 1 of an answer), or finds the answer to the review
   * it repeats (repeated-reviews.ts). */
  function decodeStage(admission: Admission): void {
    const body = admission.body!;
    admission.body = undefined;
    try {
      if (body.length === 0) throw new HttpError(400, 'bad_request', 'body is empty: expected an AdmissionReview');
      // A small body without its managedFields (review-text.ts); a large one as it is, so that its
      // text is never copied once more (the memory budget counts one copy).
      const small = body.length <= SMALL_BODY_BYTES;
      // What JSON.parse reads of a small body, and what its repeated-review key is taken over.
      const kept = small ? reviewBytes(body) : body;
      if (small && admission.span === undefined) {
        const span = requestUidSpan(body);
        // A named object's review never repeats: no key, no lookup, never remembered.
        if (span !== undefined && !requestIsNamed(body, span)) {
          admission.span = span;
          // The uid is the request's first member, ahead of every managedFields: at the same place in `kept`.
          // One cache for every revision: the same review under two routes is two answers.
          admission.key = admission.route === '' ? reviewKey(kept, span) : `${admission.route}\n${reviewKey(kept, span)}`;
          admission.repeats = repeated.get(admission.key);
          if (admission.repeats !== undefined) {
            admission.uid = span.uid;
            admission.body = body;
            return;
          }
        }
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(kept.toString('utf8'));
      } catch (firstError) {
        // Where the whole body breaks, not the text without managedFields.
        let error = firstError;
        if (small) {
          try {
            JSON.parse(body.toString('utf8'));
          } catch (whole) {
            error = whole;
          }
        }
        // V8's message quotes part of the body, which may be a secret: say only where it broke.
        const position = /position (\d+)/.exec((error as Error).message)?.[1];
        throw new HttpError(400, 'bad_request', `body is not JSON${position ? ` (syntax error at byte ${position})` : ' (unexpected end or invalid syntax)'}`);
      }
      try {
        admission.review = decodeAdmissionReview(parsed);
      } catch (error) {
        if (error instanceof BadAdmissionReview) {
          admission.uid = field(error.uid);
          throw new HttpError(400, 'bad_request', `not an AdmissionReview: ${error.message}`);
        }
        throw error;
      }
      admission.uid = field(admission.review.request.uid);
      admission.remember = admission.span !== undefined && uidIsSpan(body, admission.span, admission.review.request.uid);
    } catch (error) {
      admission.error = asHttpError(error);
    }
  }

  /** Works out the answer (stage 2): the kept answer of the review this one repeats, or the engine's. */
  function evaluateStage(admission: Admission): void {
    if (admission.review === undefined && admission.repeats === undefined) return;
    try {
      const config = context.config();
      if (!config) throw new HttpError(503, 'error', 'no valid injector config loaded yet');
      if (admission.repeats !== undefined) {
        const repeats = admission.repeats;
        admission.repeats = undefined;
        if (repeated.answersFor(config, context.namespaces?.generation)) {
          admission.body = undefined;
          admission.answered = repeats;
          admission.answer = AnswerTexts.joined(admission.span!.apiVersion, admission.span!.uid, repeats.tail);
          metrics.countRepeatedReview();
          return;
        }
        // Kept under another config: the long way.
        decodeStage(admission);
        if (admission.review === undefined) return;
      }
      const review = admission.review!;
      // Only when some override reads namespace defaults: otherwise nothing is looked up or made.
      const defaults = context.namespaces?.active ? context.namespaces.lookup(review.request.namespace) : undefined;
      const result = evaluateRoute(review.request, config, admission.route, defaults === undefined ? undefined : 'unknown' in defaults ? { namespaceUnknown: defaults.unknown } : { namespaceAnnotations: defaults.annotations });
      const tail = answers.tail(result.response);
      const answered: Answered = {
        ...(result.unserved !== undefined ? { unserved: result.unserved } : {}),
        request: requestLogFields(review.request),
        decisions: result.decisions,
        podWarnings: result.podWarnings,
        patched: result.patch.length > 0,
        warnings: result.response.warnings,
        tail,
      };
      admission.answered = answered;
      admission.answer = AnswerTexts.joined(review.apiVersion, result.response.uid, tail);
      if (admission.remember) repeated.remember(admission.key!, config, answered, context.namespaces?.generation);
    } catch (error) {
      admission.error = asHttpError(error);
    }
  }

  /** Gives back the body's bytes, sends the answer or the refusal, counts and logs (stage 3). */
  function sendStage(admission: Admission): void {
    const { res, started, held, answered, answer } = admission;
    // Given back first, so that nothing below, whatever it throws, can keep the bytes held.
    if (held > 0) budget.release(held);
    try {
      if (admission.error !== undefined || answered === undefined || answer === undefined) {
        reject(res, started, 0, admission.error ?? new HttpError(500, 'error', 'internal error: no answer'), admission.uid, false);
        return;
      }
      try {
        sendText(res, 200, answer.text, undefined, answer.bytes);
      } catch (error) {
        reject(res, started, 0, asHttpError(error), admission.uid, false);
        return;
      }
    } catch {
      // Not expected (the refusal itself failed): the client sees the connection close rather than
      // waiting for its timeout, and the other answers of the batch are still sent.
      res.destroy();
      return;
    }
    // The revision that decided (`revision:<name>`): only a revision the loaded config serves decides anything
    // (the answer for one it lacks has no decisions), so the label's values come from the config.
    metrics.countDecisions(answered.decisions, admission.route.startsWith('revision:') ? admission.route.slice('revision:'.length) : '');
    if (answered.unserved !== undefined) metrics.countUnservedRevision(answered.unserved);
    for (const warning of answered.podWarnings) {
      metrics.countPodWarning(warning.injection, warning.reason);
      if (warning.override) metrics.countIgnoredOverride(warning.injection, warning.override.annotation, warning.override.reason);
    }
    finish(started, 0, answered.patched ? 'patched' : 'unchanged', (elapsedMs) => {
      if (logger.enabled('info')) logger.logLater('info', 'admission', admissionLogMembers, admissionLogFields(answered, admission.uid, elapsedMs));
      if (logger.enabled('debug')) logger.log('debug', 'decisions', { uid: admission.uid, decisions: answered.decisions, warnings: answered.warnings });
    });
  }

  /**
   * Small bodies received in the same turn of the event loop are answered together, stage by stage:
   * every body parsed, then every review evaluated, then every answer sent. Each stage's code (V8's
   * JSON parser, the engine, TLS and HTTP writing) then runs several times in a row while it is in the
   * CPU's instruction cache, instead of each evicting the others once per request. An answer waits at
   * most for the others of its turn; under light load a turn holds one. Large bodies are answered at
   * once, one at a time, so their parsed objects never pile up.
   */
  let waiting: Admission[] = [];
  function answerWaiting(): void {
    const batch = waiting;
    waiting = [];
    for (const admission of batch) decodeStage(admission);
    for (const admission of batch) evaluateStage(admission);
    for (const admission of batch) sendStage(admission);
  }

  function answer(res: ServerResponse, started: number, held: number, body: Buffer, route: AdmissionRoute): void {
    const admission: Admission = {
      route,
      res,
      started,
      held,
      body,
      uid: undefined,
      review: undefined,
      span: undefined,
      key: undefined,
      remember: false,
      repeats: undefined,
      answered: undefined,
      answer: undefined,
      error: undefined,
    };
    if (body.length <= SMALL_BODY_BYTES) {
      if (waiting.push(admission) === 1) setImmediate(answerWaiting);
      return;
    }
    decodeStage(admission);
    evaluateStage(admission);
    sendStage(admission);
  }

  /** `started`: when the request's headers were in (the server's listener reads the clock once). */
  return function handleAdmission(req: IncomingMessage, res: ServerResponse, started = performance.now(), route: AdmissionRoute = ''): void {
    if (!isJsonContentType(req.headers['content-type'])) {
      const got = JSON.stringify(field(req.headers['content-type']) ?? '');
      reject(res, started, 0, new HttpError(415, 'unsupported_media_type', `Content-Type must be application/json, got ${got}`), undefined, false);
      return;
    }
    const lengthHeader = req.headers['content-length'];
    const declared = lengthHeader === undefined ? NaN : Number(lengthHeader);
    const known = Number.isInteger(declared) && declared >= 0;
    if (known && declared > MAX_BODY_BYTES) {
      reject(res, started, 0, new HttpError(413, 'too_large', `body of ${declared} bytes exceeds the limit of ${MAX_BODY_BYTES} bytes`), undefined, true);
      return;
    }
    const shed = (what: string) =>
      new HttpError(
        429,
        'shed',
        `${what} would take the request bodies held by this replica over its memory budget of ${budget.sizing.budgetBytes} bytes ` +
          `(${budget.held} held now); retry later or on another replica`,
      );
    // Decided from the declared length, before a byte of the body is read. The connection stays open:
    // Node reads the rest of the body (at most MAX_BODY_BYTES) and drops it chunk by chunk, which holds
    // no memory, and the client reliably sees the 429 (closing now would reset the connection under a
    // client still sending, and lose the answer).
    // What the body will cost parsed, in budget bytes: a small one its worst case at once, unread; a
    // larger one its length now and its shape's charge as its bytes arrive (checked before parsing).
    const scanned = !known || declared > UNSCANNED_BODY_BYTES;
    const charge = known ? (scanned ? declared : declared * JSON_WORST_BUDGET_PER_BODY_BYTE) : 0;
    if (known && !budget.take(0, charge)) {
      // Even for a client that asked to close after this request: the server closing first, while the
      // client still sends, would reset the connection and lose the 429. The client closes once it
      // has the answer.
      res.shouldKeepAlive = true;
      reject(res, started, 0, shed(`a body of ${declared} bytes`), undefined, false, { 'Retry-After': SHED_RETRY_AFTER_SECONDS });
      return;
    }
    let held = charge;
    let done = false;
    // A declared length is read straight into one buffer; an unknown one is collected chunk by chunk.
    let whole: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let size = 0;
    const fail = (error: HttpError, headers?: Record<string, string | number>) => {
      done = true;
      whole = undefined;
      chunks = undefined;
      reject(res, started, held, error, undefined, true, headers);
      held = 0;
    };
    /** Takes the budget bytes of `chunk`'s shape; false (and the request refused) when they do not fit. */
    const shape = scanned ? new JsonShapeScanner() : undefined;
    const chargeShape = (chunk: Buffer): boolean => {
      const more = shape!.charge(chunk);
      if (more === 0 || budget.take(held, more)) {
        held += more;
        return true;
      }
      // A shape that alone costs more than every large body may hold together never fits: 413, not 429.
      if (held + more > budget.sizing.largeBodyBytes) {
        fail(new HttpError(413, 'too_large', `body's JSON shape (its objects, arrays and members) would take over ${held + more} bytes of this replica's memory budget, more than the ${budget.sizing.largeBodyBytes} large bodies may hold`));
      } else fail(shed(`a body of ${known ? declared : size} bytes, by its JSON shape,`), { 'Retry-After': SHED_RETRY_AFTER_SECONDS });
      return false;
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      if (scanned && known && !chargeShape(chunk)) return;
      if (known) {
        if (whole === undefined) {
          // A body that is one chunk (every small review) is used as it is.
          if (chunk.length === declared) {
            whole = chunk;
            size = declared;
            return;
          }
          whole = Buffer.allocUnsafe(declared);
        }
        // Node's HTTP/1.1 parser never delivers more than Content-Length; nghttp2 resets an HTTP/2
        // stream whose DATA exceeds it. Checked all the same: a copy past the end would be lost.
        if (size + chunk.length > declared) {
          fail(new HttpError(400, 'bad_request', `body longer than its Content-Length of ${declared} bytes`));
          return;
        }
        chunk.copy(whole, size);
        size += chunk.length;
        return;
      }
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        fail(new HttpError(413, 'too_large', `body exceeds the limit of ${MAX_BODY_BYTES} bytes`));
        return;
      }
      if (!budget.take(held, chunk.length)) {
        fail(shed(`a body of unknown length, at ${size} bytes so far,`), { 'Retry-After': SHED_RETRY_AFTER_SECONDS });
        return;
      }
      held += chunk.length;
      if (!chargeShape(chunk)) return;
      (chunks ??= []).push(chunk);
    });
    req.on('end', () => {
      if (done) return;
      // HTTP/2: a stream reset by its client (or cut by the connection table) ends its request too,
      // with what had arrived; HTTP/1.1 never ends short of its Content-Length.
      const stream = http2StreamOf(req);
      if ((stream !== undefined && stream.destroyed) || (known && size !== declared)) {
        fail(new HttpError(400, 'aborted', `request body not received: ${stream?.destroyed ? `the stream was reset (code ${stream.rstCode ?? 'none'})` : `${size} of ${declared} bytes`}`));
        return;
      }
      done = true;
      let body: Buffer;
      if (known) body = whole === undefined ? Buffer.alloc(0) : size === declared ? whole : whole.subarray(0, size);
      else body = chunks === undefined ? Buffer.alloc(0) : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      whole = undefined;
      chunks = undefined;
      answer(res, started, held, body, route);
      held = 0;
    });
    // A client that disconnects mid-body, or a body cut off (req.destroy), ends here: its bytes are
    // given back. No 'error' listener: Node emits a request's 'error' only to listeners it has, and
    // 'close' follows every one of them, with the error in `req.errored`.
    req.on('close', () => {
      if (done) return;
      const cause = req.errored;
      fail(new HttpError(400, 'aborted', `request body not received: ${cause ? cause.message : 'the client closed the connection'}`));
    });
  };
}
