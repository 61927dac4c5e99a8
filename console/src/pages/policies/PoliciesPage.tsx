/**
 * Policies: the account's Cedar policies on tool calls and the global ones (docs/governance.md#policies).
 * Create and edit them in a Cedar editor (errors at their line), enable, disable or delete them,
 * try a call in the dry run, and read the recent decisions.
 */
import { Badge, Button, Card, Code, Group, Spoiler, Stack, Switch, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { client } from '../../api';
import { useAuth } from '../../auth';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../../ui';
import { Decisions } from './Decisions';
import { DryRun } from './DryRun';
import { type Policy, PolicyEditor } from './PolicyEditor';

/** What the editor shows: nothing, a new policy, or an existing one. */
type Editing = { kind: 'none' } | { kind: 'new' } | { kind: 'edit'; policy: Policy };

export function PoliciesPage() {
  const admin = useAuth().me?.roles.includes('admin') ?? false;
  const policies = useLoad(async () => (await client.policies.list()).data);
  const schema = useLoad(() => client.policies.schema());
  const [editing, setEditing] = useState<Editing>({ kind: 'none' });
  const [draft, setDraft] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Policy | null>(null);
  const { error, act } = useAction();

  const open = (e: Editing) => {
    setEditing(e);
    setDraft(e.kind === 'edit' ? e.policy.source : null);
  };
  const toggle = (p: Policy, enabled: boolean) =>
    act(async () => {
      await client.policies.update(p.id, { enabled });
      policies.reload();
    });
  const remove = (p: Policy) =>
    act(async () => {
      setDeleting(null);
      await client.policies.delete(p.id);
      if (editing.kind === 'edit' && editing.policy.id === p.id) open({ kind: 'none' });
      policies.reload();
    });
  /** Global policies bind everyone and only admins change them. */
  const mine = (p: Policy) => p.scope === 'account' || admin;

  return (
    <Stack>
      <Title order={2}>Policies</Title>
      <Text c="dimmed" size="sm">
        Calls are allowed unless a policy forbids them. Each policy is one Cedar forbid statement, checked before every
        tool call of this account, its agents and its API keys; a denied call answers 403 policy_denied with the ids of
        the policies that matched.
      </Text>
      <Card withBorder>
        {editing.kind === 'none' ? (
          <Group>
            <Button onClick={() => open({ kind: 'new' })}>New policy</Button>
          </Group>
        ) : (
          <PolicyEditor
            key={editing.kind === 'edit' ? editing.policy.id : 'new'}
            policy={editing.kind === 'edit' ? editing.policy : undefined}
            admin={admin}
            onSource={setDraft}
            onSaved={() => {
              open({ kind: 'none' });
              policies.reload();
            }}
            onCancel={() => open({ kind: 'none' })}
          />
        )}
      </Card>
      <ProblemAlert error={error} />
      <Section state={policies} empty={(d) => d.length === 0} emptyText="No policies: every tool call is allowed.">
        {(d) => (
          <Table striped data-testid="policies">
            <TableHead columns={['Policy', 'Description', 'Scope', 'Enabled', 'Created', { hidden: 'Actions' }]} />
            <Table.Tbody>
              {d.map((p) => (
                <Table.Tr key={p.id}>
                  <Table.Td ff="monospace">{p.id}</Table.Td>
                  <Table.Td>
                    {p.description || <Text c="dimmed">—</Text>}
                    {p.approval ? (
                      <Badge ml="xs" color="yellow" variant="light">
                        approval
                      </Badge>
                    ) : null}
                  </Table.Td>
                  <Table.Td>{p.scope}</Table.Td>
                  <Table.Td>
                    <Switch
                      checked={p.enabled}
                      disabled={!mine(p)}
                      onChange={(e) => void toggle(p, e.currentTarget.checked)}
                      aria-label={`Enabled: ${p.id}`}
                    />
                  </Table.Td>
                  <Table.Td>{fmtDate(p.created_at)}</Table.Td>
                  <Table.Td>
                    {!mine(p) ? null : deleting?.id === p.id ? (
                      // Delete asks first, in place: the policy stops applying at once and cannot be restored.
                      <Group gap="xs" wrap="nowrap" data-testid={`confirm-delete-${p.id}`}>
                        <Text size="sm">Delete it?</Text>
                        <Button
                          size="xs"
                          color="red"
                          onClick={() => void remove(p)}
                          aria-label={`Delete policy ${p.id}`}
                        >
                          Delete policy
                        </Button>
                        {/* Focus goes to the safe choice (the Delete button that had it is gone). */}
                        <Button size="xs" variant="default" onClick={() => setDeleting(null)} autoFocus>
                          Keep it
                        </Button>
                      </Group>
                    ) : (
                      <Group gap="xs" wrap="nowrap">
                        <Button
                          size="xs"
                          variant="light"
                          onClick={() => open({ kind: 'edit', policy: p })}
                          aria-label={`Edit ${p.id}`}
                        >
                          Edit
                        </Button>
                        <Button
                          size="xs"
                          variant="light"
                          color="red"
                          onClick={() => setDeleting(p)}
                          aria-label={`Delete ${p.id}`}
                        >
                          Delete
                        </Button>
                      </Group>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
      <Card withBorder>
        <DryRun policies={policies.data ?? []} draft={draft} />
      </Card>
      <Card withBorder>
        <Decisions />
      </Card>
      <Card withBorder>
        <Title order={3}>Schema</Title>
        <Text size="sm" c="dimmed">
          The entities, action and context a policy may name (namespace Platform).
        </Text>
        <Section state={schema}>
          {(s) => (
            <Spoiler maxHeight={120} showLabel="Show the whole schema" hideLabel="Show less">
              <Code block data-testid="cedar-schema">
                {s.schema}
              </Code>
            </Spoiler>
          )}
        </Section>
      </Card>
    </Stack>
  );
}
