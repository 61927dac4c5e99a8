/**
 * Connected accounts (docs/connections.md): the caller's OAuth 2.0 grants at services whose
 * manifest says `auth.type: oauth2`. Connect → take the flow in this browser
 * (`POST /connections/authorize`: only the user who started it; it sets the binding cookie the
 * callback requires) → the upstream's consent page → the platform's callback → back here with
 * `?connection_id=…&status=active` (or `error`, `error_description`).
 *
 * This page is also the `authorization_url` that `POST /connections` answers to the SDK, the CLI
 * and agents (`/console/connections?state=…`): opened in a browser, it takes that flow the same
 * way once the person is signed in (a sign-in first comes back here: the state waits in
 * sessionStorage), and says so when the link was made by another account.
 */
import { Alert, Autocomplete, Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { useLocation, useNavigate } from 'react-router-dom';
import { all, client, connectionsReturnUri, type Item } from '../api';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../ui';

type Connection = Item<'connections.list'>;

const STATUS_COLOR: Record<Connection['status'], string> = {
  active: 'green',
  pending: 'gray',
  expired: 'orange',
  error: 'red',
  revoked: 'gray',
};

/** sessionStorage key of a flow opened from a link (`?state=`) that waits for the sign-in. */
const PENDING_KEY = 'ap.connections.pending-state';

// Runs when the console loads, before the sign-in gate: a link's state survives the sign-in round trip.
if (typeof window !== 'undefined' && window.location.pathname === '/console/connections') {
  const state = new URLSearchParams(window.location.search).get('state');
  if (state) sessionStorage.setItem(PENDING_KEY, state);
}

/** Take the flow of `state` in this browser (binding cookie) and go to the upstream's consent page. */
async function takeFlow(state: string): Promise<void> {
  const taken = await client.connections.authorize({ state });
  window.location.assign(taken.authorization_url);
}

/** Start (or renew) the connection of the caller's account — or of agent `agentId` — at `service`, and go to the upstream's consent page. */
export async function connectAccount(service: string, agentId?: string): Promise<void> {
  const started = await client.connections.create({
    service,
    return_to: connectionsReturnUri(),
    ...(agentId ? { agent_id: agentId } : {}),
  });
  await takeFlow(started.state);
}

/** A refused link, in words: another account's flow answers 404; a used or expired one 400. */
function linkProblem(e: unknown): Error {
  const status = (e as { status?: number }).status;
  if (status === 404)
    return new Error(
      'This connection link was made by another account (or does not exist). Nothing was connected. Start the connection from your own account.',
    );
  if (status === 400)
    return new Error(
      `This connection link can no longer be used: ${(e as { detail?: string }).detail ?? 'it expired or was used'}. Start the connection again.`,
    );
  return e as Error;
}

export function ConnectionsPage() {
  const location = useLocation();
  const navigate = useNavigate();
  const connections = useLoad(() => all(client.connections.list({ limit: 100 })));
  // oauth2 services among the caller's subscriptions: the ones it can connect (any other name or id may be typed).
  const candidates = useLoad(async () => {
    const subs = await all(client.subscriptions.list({ status: 'active', limit: 100 }));
    const manifests = await Promise.all(subs.map((s) => client.services.manifest(s.service_id).catch(() => null)));
    return manifests.filter((m) => m?.auth.type === 'oauth2').map((m) => m!.name);
  });
  const [service, setService] = useState('');
  const [returned, setReturned] = useState<{ status: string; id: string | null; error: string | null } | null>(null);
  const [revoked, setRevoked] = useState<string | null>(null);
  const { error, setError, act } = useAction();
  const [taking, setTaking] = useState(false);

  // Opened from an authorization_url (directly, or back from the sign-in): take that flow here.
  useEffect(() => {
    const state = sessionStorage.getItem(PENDING_KEY);
    if (!state) return;
    sessionStorage.removeItem(PENDING_KEY);
    if (new URLSearchParams(location.search).has('state')) navigate('/connections', { replace: true });
    setTaking(true);
    takeFlow(state).catch((e: unknown) => {
      setTaking(false);
      setError(linkProblem(e));
    });
    // Once per page load: the pending state is taken (and removed) the first time.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  // Back from the upstream: keep what the callback said, then drop it from the address bar.
  useEffect(() => {
    const q = new URLSearchParams(location.search);
    if (!q.has('status') && !q.has('error')) return;
    setReturned({
      status: q.get('status') ?? 'error',
      id: q.get('connection_id'),
      error: q.get('error_description') ?? q.get('error'),
    });
    navigate('/connections', { replace: true });
  }, [location.search, navigate]);

  const disconnect = (c: Connection) =>
    act(async () => {
      const r = await client.connections.delete(c.id);
      setRevoked(`${c.service.name} disconnected (upstream revocation: ${r.upstream_revocation.replace('_', ' ')})`);
      connections.reload();
    });

  return (
    <Stack>
      <Title order={2}>Connected accounts</Title>
      <Text c="dimmed" size="sm">
        Services that act on your own account at another provider (OAuth 2.0). Tools of these services run with your
        grant; you can revoke it here at any time.
      </Text>
      {returned ? (
        returned.error || returned.status !== 'active' ? (
          <Alert color="red" title="The connection failed" role="alert">
            {returned.error ?? `Connection ${returned.id} is ${returned.status}.`}
          </Alert>
        ) : (
          <Alert color="green" title="Account connected" role="status" data-testid="connect-result">
            Connection {returned.id} is {returned.status}.
          </Alert>
        )
      ) : null}
      {taking ? (
        <Alert color="blue" title="Connecting" role="status" data-testid="connect-taking">
          Going to the provider to connect your account…
        </Alert>
      ) : null}
      {revoked ? (
        <Alert color="blue" title="Disconnected" role="status">
          {revoked}
        </Alert>
      ) : null}
      <Group align="end">
        <Autocomplete
          label="Service to connect"
          description="An oauth2 service (name or id)"
          value={service}
          onChange={setService}
          data={candidates.data ?? []}
          style={{ flex: 1, maxWidth: 420 }}
        />
        <Button disabled={!service.trim()} onClick={() => void act(() => connectAccount(service.trim()))}>
          Connect
        </Button>
      </Group>
      <ProblemAlert error={error} />
      <Section state={connections} empty={(d) => d.length === 0} emptyText="No connected accounts yet.">
        {(d) => (
          <Table data-testid="connections">
            <TableHead
              columns={['Service', 'For', 'Status', 'Scopes', 'Token expires', 'Last used', { hidden: 'Actions' }]}
            />
            <Table.Tbody>
              {d.map((c) => (
                <Table.Tr key={c.id}>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>{c.service.name}</Table.Td>
                  <Table.Td>{c.agent_id ?? 'you'}</Table.Td>
                  <Table.Td>
                    <Badge color={STATUS_COLOR[c.status]} data-testid={`connection-${c.service.name}`}>
                      {c.status}
                    </Badge>
                    {c.last_error ? (
                      <Text size="xs" c="red">
                        {c.last_error}
                      </Text>
                    ) : null}
                  </Table.Td>
                  <Table.Td>{c.scopes.join(' ') || '—'}</Table.Td>
                  <Table.Td>{fmtDate(c.expires_at)}</Table.Td>
                  <Table.Td>{fmtDate(c.last_used_at)}</Table.Td>
                  <Table.Td>
                    <Group gap="xs" wrap="nowrap">
                      {c.status !== 'active' ? (
                        <Button
                          size="xs"
                          onClick={() => void act(() => connectAccount(c.service.id, c.agent_id ?? undefined))}
                          aria-label={`Reconnect ${c.service.name}`}
                        >
                          Reconnect
                        </Button>
                      ) : null}
                      <Button
                        size="xs"
                        color="red"
                        variant="light"
                        onClick={() => void disconnect(c)}
                        aria-label={`Disconnect ${c.service.name}`}
                      >
                        Disconnect
                      </Button>
                    </Group>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
    </Stack>
  );
}
