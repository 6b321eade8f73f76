/**
 * The sign-in page (`/<tenant>/login/<uid>`): oidc-provider hands a browser here when the authorize
 * request needs a user. The interaction is bound to a SameSite=Lax cookie that names this uid, so a
 * post from another site carries no interaction and is refused: that is the form's CSRF protection.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import { BodyTooLargeError, readBody } from '../core/http.ts';
import { type Directory, redirectOrigins } from './directory.ts';
import type { EntraError } from './entra-errors.ts';
import { errorBody, sendPage, signInForm } from './pages.ts';

/** Entra's words for a wrong user name or password (AADSTS50126 on the page). */
export const WRONG_CREDENTIALS =
  "Your account or password is incorrect. If you don't remember your password, reset it now.";
const FORM_LIMIT = 16 * 1024;

const noSignIn: EntraError = {
  status: 400,
  error: 'invalid_request',
  code: 90014,
  message:
    'This sign-in request has expired or was not started here. Go back to the application and sign in again.',
};

export function loginHandler(provider: Provider, directory: Directory, tenantId: string) {
  return async (req: IncomingMessage, res: ServerResponse, uid: string) => {
    let details: Awaited<ReturnType<Provider['interactionDetails']>>;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      return sendPage(res, 400, 'Sign in', errorBody(noSignIn));
    }
    if (details.uid !== uid) return sendPage(res, 400, 'Sign in', errorBody(noSignIn));
    if (details.prompt.name === 'consent') return consent(provider, details, req, res);
    const app = directory.application(String(details.params.client_id));
    // The form's post ends, after two redirects, at the app's redirect URI.
    const formOrigins = redirectOrigins(app);
    const form = (userName?: string, message?: string) =>
      signInForm({
        action: `/${tenantId}/login/${uid}`,
        clientName: app?.displayName ?? 'the application',
        userName,
        message,
      });

    // Entra fills the user name from the authorize request's login_hint.
    const hint = details.params.login_hint;
    if (req.method === 'GET')
      return sendPage(res, 200, 'Sign in', form(typeof hint === 'string' ? hint : undefined), formOrigins);
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'GET, POST' }).end();
      return;
    }
    let body: Buffer;
    try {
      body = await readBody(req, FORM_LIMIT);
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error;
      return sendPage(
        res,
        413,
        'Sign in',
        errorBody({ ...noSignIn, status: 413, message: 'The sign-in form is too large.' }),
      );
    }
    const fields = new URLSearchParams(body.toString('utf8'));
    const userName = fields.get('username') ?? '';
    const user = directory.userByName(userName);
    if (!user || !directory.checkPassword(user, fields.get('password') ?? ''))
      return sendPage(res, 200, 'Sign in', form(userName, WRONG_CREDENTIALS), formOrigins);
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: user.objectId } },
      { mergeWithLastSubmission: false },
    );
  };
}

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;

/**
 * Consent-free (the test users have granted every app everything): a consent prompt, as
 * `prompt=consent` asks, is answered at once with what it lacks.
 */
async function consent(provider: Provider, details: Details, req: IncomingMessage, res: ServerResponse) {
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = details.prompt.details as {
    missingOIDCScope?: string[];
    missingOIDCClaims?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({
        accountId: details.session?.accountId,
        clientId: String(details.params.client_id),
      });
  if (!grant) throw new Error('the interaction names a grant that does not exist');
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
  if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {}))
    grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}
