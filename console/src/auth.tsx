/** Who is signed in: restored from the session cookie on load, completed on /callback. */
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { useLocation, useNavigate } from 'react-router-dom';
import { client, completeSignIn, onSessionEnded, restoreSession, signOut, takeReturnPath, type Result } from './api';

/** The signed-in user (`GET /v1/auth/me`). */
export type Me = Result<'auth.me'>;

interface AuthState {
  status: 'loading' | 'anonymous' | 'signed-in' | 'error';
  me: Me | null;
  error: string | null;
  /** Why a signed-in person is back at the sign-in page (their session ended elsewhere or expired). */
  notice: string | null;
  signOut(): Promise<void>;
}

const AuthContext = createContext<AuthState | null>(null);

/** One restore per page load, shared by effect re-runs (React StrictMode runs effects twice in development; a login state is single use). */
let restoring: Promise<Me | null> | null = null;

function restore(pathname: string, search: string): Promise<Me | null> {
  restoring ??= (async () => {
    if (pathname === '/callback') {
      const q = new URLSearchParams(search);
      const err = q.get('error');
      if (err) throw new Error(q.get('error_description') ?? err);
      await completeSignIn(q.get('code') ?? '', q.get('state') ?? '', q.get('iss'));
    } else if (!(await restoreSession())) return null;
    return client.auth.me();
  })();
  return restoring;
}

export function useAuth(): AuthState {
  const a = useContext(AuthContext);
  if (!a) throw new Error('useAuth outside AuthProvider');
  return a;
}

/** True when the user has one of `roles` (admin counts as every role). */
export function hasRole(me: Me | null, ...roles: Array<Me['roles'][number]>): boolean {
  return !!me && (me.roles.includes('admin') || roles.some((r) => me.roles.includes(r)));
}

export function AuthProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<Omit<AuthState, 'signOut'>>({
    status: 'loading',
    me: null,
    error: null,
    notice: null,
  });
  const location = useLocation();
  const navigate = useNavigate();

  useEffect(() => {
    let cancelled = false;
    restore(location.pathname, location.search).then(
      (me) => {
        if (location.pathname === '/callback') navigate(takeReturnPath(), { replace: true });
        if (!cancelled)
          setState(
            me
              ? { status: 'signed-in', me, error: null, notice: null }
              : { status: 'anonymous', me: null, error: null, notice: null },
          );
      },
      (e: Error) => !cancelled && setState({ status: 'error', me: null, error: e.message, notice: null }),
    );
    return () => {
      cancelled = true;
    };
    // Runs once per load: the callback is handled, then the app navigates away from it.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // The session ended without a sign-out here: back to the sign-in page, saying why; after signing in again the person returns to the page they were on.
  useEffect(
    () =>
      onSessionEnded(() => {
        restoring = null;
        setState((s) =>
          s.status === 'signed-in'
            ? {
                status: 'anonymous',
                me: null,
                error: null,
                notice: 'Your session has ended (it expired or you signed out elsewhere). Sign in again to continue.',
              }
            : s,
        );
      }),
    [],
  );

  const value: AuthState = {
    ...state,
    async signOut() {
      try {
        await signOut();
      } finally {
        // The SDK has forgotten the access token whatever the platform answered.
        restoring = null;
        setState({ status: 'anonymous', me: null, error: null, notice: null });
        navigate('/', { replace: true });
      }
    },
  };
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}
