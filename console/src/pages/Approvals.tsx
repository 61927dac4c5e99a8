/**
 * Approvals: the tool calls a policy holds for a person's decision (docs/governance.md#approvals).
 * `/approvals/:id` is the `approval_url` a held call answers with: that request first, with its
 * exact arguments, then the account's other pending requests. Deciding needs `approvals:decide`
 * (a user's own session holds it); the platform refuses everything else.
 */
import {
  Badge,
  Button,
  Card,
  Code,
  Group,
  SegmentedControl,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
} from '@mantine/core';
import { useState } from 'react';
import { useParams } from 'react-router-dom';
import { all, client, type Item } from '../api';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../ui';

type Approval = Item<'approvals.list'>;
type Status = 'pending' | 'approved' | 'denied' | 'expired' | 'used';

const COLORS: Record<Status, string> = {
  pending: 'yellow',
  approved: 'green',
  denied: 'red',
  expired: 'gray',
  used: 'blue',
};

export function ApprovalsPage() {
  const { id } = useParams();
  const [status, setStatus] = useState<Status>('pending');
  const one = useLoad(() => (id ? client.approvals.get(id) : Promise.resolve(null)), [id]);
  const list = useLoad(() => all(client.approvals.list({ status, limit: 100 })), [status]);
  const reload = () => {
    one.reload();
    list.reload();
  };

  return (
    <Stack>
      <Title order={2}>Approvals</Title>
      <Text c="dimmed" size="sm">
        Tool calls a policy holds until a person approves them. An approved call runs once, with exactly these
        arguments, when its caller retries it before the approval expires.
      </Text>
      {id ? (
        <Section state={one} empty={(a) => a === null} emptyText="No such approval request.">
          {(a) => (a ? <ApprovalCard approval={a} onDecided={reload} /> : null)}
        </Section>
      ) : null}
      <SegmentedControl
        value={status}
        onChange={(v) => setStatus(v as Status)}
        data={['pending', 'approved', 'denied', 'expired', 'used']}
        aria-label="Status"
      />
      <Section state={list} empty={(d) => d.length === 0} emptyText={`No ${status} requests.`}>
        {(d) => (
          <Table striped>
            <TableHead columns={['Tool', 'Caller', 'Arguments', 'Expires', 'Status', { hidden: 'Actions' }]} />
            <Table.Tbody>
              {d.map((a) => (
                <ApprovalRow key={a.id} approval={a} onDecided={reload} />
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
    </Stack>
  );
}

/** Approve and deny buttons of a pending request, with the optional reason of a denial. */
function Decide({ approval, onDecided }: { approval: Approval; onDecided: () => void }) {
  const [reason, setReason] = useState('');
  const { error, act } = useAction();
  if (approval.status !== 'pending') return null;
  const decide = (approve: boolean) =>
    act(async () => {
      if (approve) await client.approvals.approve(approval.id);
      else await client.approvals.deny(approval.id, reason.trim() ? { reason: reason.trim() } : {});
      onDecided();
    });
  return (
    <Stack gap="xs">
      <Group align="end" gap="xs">
        <Button size="xs" color="green" onClick={() => void decide(true)} aria-label={`Approve ${approval.id}`}>
          Approve
        </Button>
        <TextInput
          size="xs"
          placeholder="reason (optional)"
          value={reason}
          onChange={(e) => setReason(e.currentTarget.value)}
          aria-label={`Reason to deny ${approval.id}`}
        />
        <Button
          size="xs"
          color="red"
          variant="light"
          onClick={() => void decide(false)}
          aria-label={`Deny ${approval.id}`}
        >
          Deny
        </Button>
      </Group>
      <ProblemAlert error={error} />
    </Stack>
  );
}

function ApprovalCard({ approval: a, onDecided }: { approval: Approval; onDecided: () => void }) {
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group justify="space-between">
          <Text fw={600}>
            {a.service_name}/{a.tool_name}
          </Text>
          <Badge color={COLORS[a.status]}>{a.status}</Badge>
        </Group>
        <Text size="sm">
          Requested by {a.agent_id ? `agent ${a.agent_id}` : 'this account'} on {fmtDate(a.created_at)}; expires{' '}
          {fmtDate(a.expires_at)}. Policies: {a.policy_ids.join(', ') || '—'}.
        </Text>
        <Code block>{JSON.stringify(a.arguments, null, 2)}</Code>
        {a.reason ? <Text size="sm">Reason: {a.reason}</Text> : null}
        <Decide approval={a} onDecided={onDecided} />
      </Stack>
    </Card>
  );
}

function ApprovalRow({ approval: a, onDecided }: { approval: Approval; onDecided: () => void }) {
  return (
    <Table.Tr>
      <Table.Td>
        {a.service_name}/{a.tool_name}
      </Table.Td>
      <Table.Td>{a.agent_id ?? 'account'}</Table.Td>
      <Table.Td ff="monospace">{JSON.stringify(a.arguments).slice(0, 80)}</Table.Td>
      <Table.Td>{fmtDate(a.expires_at)}</Table.Td>
      <Table.Td>
        <Badge color={COLORS[a.status]}>{a.status}</Badge>
      </Table.Td>
      <Table.Td>
        <Decide approval={a} onDecided={onDecided} />
      </Table.Td>
    </Table.Tr>
  );
}
