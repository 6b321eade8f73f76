/**
 * The session: one signed cookie (HMAC with the setting SessionSecret, via cookie-parser), HttpOnly,
 * SameSite=Lax, Secure whenever the request came over HTTPS. It holds a random id (what the form tokens
 * are bound to) and, in variant B, the signed-in account's id in the app's token cache; tokens never
 * leave the server. Form tokens: csrf-csrf's signed double-submit cookie, bound to the session id.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { doubleCsrf } from 'csrf-csrf';
import type { CookieOptions, NextFunction, Request, Response } from 'express';
import type { Variant } from './config.ts';
import { BAD_FORM_TOKEN } from './errors.ts';

/**
 * The app's cookies are named after its variant. Browsers send cookies by host whatever the port, so
 * two variants served from one host name on different ports would, under the same names, overwrite
 * each other's session.
 */
export const cookieNames = (variant: Variant) => {
  const prefix = `taskstack.${variant.toLowerCase()}`;
  return { session: `${prefix}.session`, form: `${prefix}.form`, signIn: `${prefix}.signin` };
};
/** The hidden field every form carries. */
export const FORM_TOKEN_FIELD = '_csrf';

export interface Session {
  sid: string;
  /** Variant B: the signed-in account (MSAL's homeAccountId). */
  account?: string;
}

const isSession = (value: unknown): value is Session =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Session).sid === 'string' &&
  ['undefined', 'string'].includes(typeof (value as Session).account);

/** Behind App Service's front end `req.secure` follows X-Forwarded-Proto (trust proxy is on). */
export const cookieOptions = (req: Request): CookieOptions => ({
  httpOnly: true,
  sameSite: 'lax',
  secure: req.secure,
  path: '/',
});

export type Sessions = ReturnType<typeof sessions>;

export function sessions(sessionSecret: string, variant: Variant) {
  const names = cookieNames(variant);
  const current = new WeakMap<Request, Session>();
  // A key of its own for the form tokens, derived so that one setting serves both.
  const formSecret = createHmac('sha256', sessionSecret).update('form tokens').digest('base64url');
  const csrf = doubleCsrf({
    getSecret: () => formSecret,
    getSessionIdentifier: (req) => current.get(req)?.sid ?? '',
    cookieName: names.form,
    cookieOptions: { sameSite: 'lax', httpOnly: true, secure: false, path: '/' },
    getCsrfTokenFromRequest: (req) =>
      (req.body as Record<string, unknown> | undefined)?.[FORM_TOKEN_FIELD] as string,
    errorConfig: { statusCode: 403, message: BAD_FORM_TOKEN },
  });

  const save = (req: Request, res: Response, session: Session) => {
    current.set(req, session);
    res.cookie(names.session, session, { ...cookieOptions(req), signed: true });
  };

  /** The request's session; a new one (and its cookie) when it has none. */
  const ensure = (req: Request, res: Response): Session => {
    const session = current.get(req);
    if (session) return session;
    const fresh = { sid: randomBytes(16).toString('base64url') };
    save(req, res, fresh);
    return fresh;
  };

  return {
    names,
    /**
     * Reads the session cookie. One the app cannot verify (signed with another secret, as after a
     * restart of A with a random one, or not signed at all) counts as none, as ASP.NET Core ignores a
     * cookie it cannot unprotect: the next page starts a new session, and a form of the old one is
     * refused by its token, which is bound to the old session's id.
     */
    read(req: Request, _res: Response, next: NextFunction) {
      const signed = (req.signedCookies as Record<string, unknown>)[names.session];
      if (isSession(signed)) current.set(req, signed);
      next();
    },
    get: (req: Request) => current.get(req),
    /**
     * The session of `account` after its sign-in: a new one (a new id: a session id seen before sign-in
     * is never the signed-in one), unless the session already is this account's, whose id was made at
     * its own sign-in: kept, the forms other tabs show stay valid when the user signs in again.
     */
    signedIn(req: Request, res: Response, account: string) {
      if (current.get(req)?.account !== account)
        save(req, res, { sid: randomBytes(16).toString('base64url'), account });
    },
    clear(res: Response) {
      res.clearCookie(names.session, { path: '/' });
      res.clearCookie(names.form, { path: '/' });
    },
    /**
     * A token for a form of this session (a session is made if needed). The page that carries it is
     * never cached, as ASP.NET's antiforgery marks any response it gives a token: a page kept by the
     * browser would show the signed-in user's name and tasks to whoever goes back after sign-out.
     */
    formToken(req: Request, res: Response): string {
      ensure(req, res);
      res.set({ 'cache-control': 'no-cache, no-store', pragma: 'no-cache' });
      return csrf.generateCsrfToken(req, res, { cookieOptions: { secure: req.secure } });
    },
    /** Refuses (403) a form post whose token does not match its cookie and session. */
    checkForm: csrf.doubleCsrfProtection,
  };
}
