/**
 * The web application: Index (GET /), Create (POST /tasks), SignOut (POST /signout, variant B), the
 * sign-in callback (CallbackPath, variant B) and the JSON task API (GET/POST /api/tasks). Every answer
 * that is not a page is plain text from errors.ts; no error shows internals.
 */
import cookieParser from 'cookie-parser';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import indexView from '../views/index.pug';
import { namedEncoding, readAs } from './charsets.ts';
import type { WebConfig } from './config.ts';
import {
  BAD_FORM_TOKEN,
  FORM_CHARSET,
  INTERNAL,
  JSON_CHARSET,
  JSON_ONLY,
  MAX_BODY_BYTES,
  MAX_FORM_FIELDS,
  NOT_FOUND,
  NOT_JSON,
  sendText,
  TOO_LARGE,
  TOO_MANY_FIELDS,
  UnavailableError,
} from './errors.ts';
import type { TaskEvents } from './events.ts';
import type { Sessions } from './session.ts';
import type { SignIn } from './signin.ts';
import { checkForm, checkTask, type TaskStore, TITLE_REQUIRED } from './tasks.ts';

export interface WebParts {
  config: WebConfig;
  store: TaskStore;
  sessions: Sessions;
  /** Variant A: the stream hub messages of Create. */
  events?: TaskEvents;
  /** Variant B: the signed-in user. */
  signIn?: SignIn;
  log(line: string): void;
}

/** What the Create form re-shows when it is refused. */
interface FormState {
  message: string;
  values: Record<string, string>;
  /** The field the message is about, when it is one field's. */
  invalid?: 'title';
}

/** The media types ASP.NET's JSON input formatter reads: application/json, text/json, application/*+json. */
const JSON_TYPE = /^(application\/json|text\/json|application\/[^\s;/]+\+json)\s*(;|$)/i;
/** Lets through a JSON body the formatter would read; 415 otherwise. */
function jsonOnly(req: Request, res: Response, next: NextFunction) {
  if (!JSON_TYPE.test(req.get('content-type') ?? '')) return sendText(res, 415, JSON_ONLY);
  // TextInputFormatter: its first encoding (UTF-8) when none is named, else one of its SupportedEncodings
  // (UTF-8, UTF-16 little-endian) by any of .NET's names; any other is a 415, as a media type it does not read.
  const named = namedEncoding(req);
  const encoding = named === null ? 'utf-8' : named;
  if (encoding !== 'utf-8' && encoding !== 'utf-16le') return sendText(res, 415, JSON_CHARSET);
  readAs(req, encoding);
  next();
}

const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/**
 * The charset of a url-encoded form. ASP.NET's form reader (FormFeature) reads a charset .NET does not know,
 * and UTF-7, as UTF-8, and US-ASCII is UTF-8's subset; body-parser reads UTF-8 and ISO-8859-1 only, so the
 * UTF-16 and UTF-32 that ASP.NET would also read answer 415 here (README).
 */
function formCharset(req: Request, res: Response, next: NextFunction) {
  if (!FORM_TYPE.test(req.get('content-type') ?? '')) return next();
  const named = namedEncoding(req);
  const encoding = !named || named === 'utf-7' || named === 'us-ascii' ? 'utf-8' : named;
  if (encoding !== 'utf-8' && encoding !== 'iso-8859-1') return sendText(res, 415, FORM_CHARSET);
  readAs(req, encoding);
  next();
}

export function createApp({ config, store, sessions, events, signIn, log }: WebParts) {
  const app = express();
  // App Service's front end terminates TLS and says so in X-Forwarded-Proto: cookies are then Secure.
  app.set('trust proxy', true);
  app.use(
    helmet({
      contentSecurityPolicy: {
        directives: {
          // Sign-out is a form whose answer redirects to the provider's end-session endpoint.
          'form-action': ["'self'", ...(signIn ? [signIn.providerOrigin] : [])],
          // The local stack serves plain HTTP on loopback; in Azure, App Service's HTTPS Only does this.
          'upgrade-insecure-requests': null,
        },
      },
    }),
  );
  app.use(cookieParser(config.sessionSecret));
  app.use(sessions.read);
  // A body is read as sent, as ASP.NET Core reads it without the RequestDecompression middleware (not in
  // its default pipeline): Content-Encoding is not applied, so a compressed body is not valid JSON (or a
  // form). body-parser would inflate gzip, deflate and br itself. Only on the routes that read a body.
  const asSent = (req: Request, _res: Response, next: NextFunction) => {
    delete req.headers['content-encoding'];
    next();
  };
  const urlencoded = express.urlencoded({
    extended: false,
    limit: MAX_BODY_BYTES,
    parameterLimit: MAX_FORM_FIELDS,
  });
  const form: RequestHandler = (req, res, next) => formCharset(req, res, () => urlencoded(req, res, next));
  // Every body jsonOnly lets through, whichever JSON media type it names.
  const json = express.json({ limit: MAX_BODY_BYTES, strict: false, type: () => true });

  if (signIn) {
    app.get(config.signIn?.callbackPath ?? '/signin-oidc', signIn.callback);
    // SignOut needs no signed-in user, as Microsoft.Identity.Web's AccountController (AllowAnonymous):
    // a session the app no longer has tokens for (after a restart) still ends, where sending it to sign
    // in would sign the user in again through the provider's session.
    app.post('/signout', asSent, form, sessions.checkForm, signIn.signOut);
    // Every other page and the API need a signed-in user.
    app.use(signIn.requireUser);
  }

  async function index(req: Request, res: Response, status = 200, refused?: FormState) {
    const profile = signIn && (await signIn.profile(res));
    if (signIn && !profile) return signIn.challenge(req, res);
    const tasks = await store.list();
    // What res.render would send: the view compiled at build time (build.ts), sent as HTML.
    res.status(status).send(
      indexView({
        variant: config.variant,
        tasks,
        profile,
        formToken: sessions.formToken(req, res),
        message: refused?.message,
        values: refused?.values ?? {},
        invalid: refused?.invalid,
      }),
    );
  }

  app.get('/', (req, res) => index(req, res));

  app.post('/tasks', asSent, form, sessions.checkForm, async (req, res) => {
    const checked = checkForm(req.body);
    if ('refused' in checked) {
      const body = (req.body ?? {}) as Record<string, unknown>;
      const values = Object.fromEntries(
        ['title', 'description', 'dueDate'].map((name) => [
          name,
          typeof body[name] === 'string' ? body[name] : '',
        ]),
      );
      const invalid = checked.refused === TITLE_REQUIRED ? 'title' : undefined;
      return index(req, res, 400, { message: checked.refused, values, invalid });
    }
    const task = await store.add(checked.task);
    // Variant A's one message per Create; bounded, and the task is kept whatever the hub does.
    await events?.send(task);
    res.redirect(303, '/');
  });

  app.get('/api/tasks', async (_req, res) => {
    res.json(await store.list());
  });

  app.post('/api/tasks', jsonOnly, asSent, json, async (req, res) => {
    // An empty body, and JSON null, are a task without a title: ASP.NET's JSON formatter reads both as
    // no value, which the action sees as a null task.
    const checked = checkTask(req.body ?? {});
    if ('refused' in checked) return sendText(res, 400, checked.refused);
    res.json(await store.add(checked.task));
  });

  app.use((_req, res) => sendText(res, 404, NOT_FOUND));

  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const failure = error as {
      type?: string;
      code?: string;
      status?: number;
      expose?: boolean;
      message?: string;
    };
    if (failure.type === 'entity.too.large') return sendText(res, 413, TOO_LARGE);
    if (failure.type === 'entity.parse.failed') return sendText(res, 400, NOT_JSON);
    // ASP.NET's form reader throws past its limit, and its antiforgery check turns that into a 400.
    if (failure.type === 'parameters.too.many') return sendText(res, 400, TOO_MANY_FIELDS);
    if (failure.code === 'EBADCSRFTOKEN') return sendText(res, 403, BAD_FORM_TOKEN);
    if (error instanceof UnavailableError) {
      log(error.message);
      return sendText(res, 503, error.publicText);
    }
    // body-parser's other refusals (an aborted request, a body shorter than its Content-Length …) say what
    // was wrong; charsets are decided before it reads (jsonOnly, formCharset).
    if (failure.expose && failure.status && failure.status >= 400 && failure.status < 500)
      return sendText(res, failure.status, `${failure.message ?? 'Bad request'}.`);
    log(`request failed: ${failure.message ?? String(error)}`);
    sendText(res, 500, INTERNAL);
  });
  return app;
}
