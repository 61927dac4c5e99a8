/**
 * The dry run (`POST /v1/policies/evaluate`): the decision the enabled policies — and, if asked,
 * the unsaved draft of the editor (id `draft`) — would take on a tool call, and which policies
 * decided. Nothing runs and nothing is logged.
 */
import { Badge, Button, Checkbox, Code, Group, JsonInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { client, type Result } from '../../api';
import { ProblemAlert, useAction } from '../../ui';
import type { Policy } from './PolicyEditor';

type Evaluation = Result<'policies.evaluate'>;

/** Colour of a decision (allow, deny, approval). */
export const DECISION_COLORS: Record<string, string> = { allow: 'green', deny: 'red', approval: 'yellow' };

export function DryRun({ policies, draft }: { policies: Policy[]; draft: string | null }) {
  const [service, setService] = useState('');
  const [tool, setTool] = useState('');
  const [agent, setAgent] = useState('');
  const [args, setArgs] = useState('{}');
  const [withDraft, setWithDraft] = useState(false);
  const [result, setResult] = useState<Evaluation | null>(null);
  const { error, setError, act } = useAction();
  const describe = new Map(policies.map((p) => [p.id, p.description]));

  const run = () =>
    act(async () => {
      setResult(null);
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(args || '{}');
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
          throw new Error('an object is expected');
      } catch (e) {
        return setError(new Error(`The arguments are not a JSON object: ${(e as Error).message}`));
      }
      setResult(
        await client.policies.evaluate({
          service: service.trim(),
          tool: tool.trim(),
          arguments: parsed,
          ...(agent.trim() ? { agent_id: agent.trim() } : {}),
          ...(withDraft && draft?.trim() ? { source: draft } : {}),
        }),
      );
    });

  return (
    <Stack>
      <Title order={3}>Dry run</Title>
      <Text size="sm" c="dimmed">
        What the enabled policies would decide on a call — nothing runs and nothing is logged.
      </Text>
      <Group grow align="start">
        <TextInput
          label="Service"
          description="name or id"
          value={service}
          onChange={(e) => setService(e.currentTarget.value)}
        />
        <TextInput
          label="Tool"
          description="name or id"
          value={tool}
          onChange={(e) => setTool(e.currentTarget.value)}
        />
        <TextInput
          label="Agent id"
          description="optional: evaluate as this agent"
          value={agent}
          onChange={(e) => setAgent(e.currentTarget.value)}
        />
      </Group>
      <JsonInput label="Arguments (JSON)" value={args} onChange={setArgs} autosize minRows={2} />
      {draft?.trim() ? (
        <Checkbox
          label="Include the policy in the editor (unsaved, id “draft”)"
          checked={withDraft}
          onChange={(e) => setWithDraft(e.currentTarget.checked)}
        />
      ) : null}
      <Group>
        <Button onClick={() => void run()} disabled={!service.trim() || !tool.trim()}>
          Evaluate
        </Button>
      </Group>
      <ProblemAlert error={error} />
      {result ? (
        <Stack gap="xs" data-testid="dry-run-result">
          <Group gap="xs">
            <Text fw={600}>Decision:</Text>
            <Badge color={DECISION_COLORS[result.decision]} data-testid="dry-run-decision">
              {result.decision}
            </Badge>
            <Text size="sm" c="dimmed">
              {result.evaluated} {result.evaluated === 1 ? 'policy' : 'policies'} could apply
            </Text>
          </Group>
          <Text size="sm" data-testid="dry-run-policies">
            Decided by:{' '}
            {result.policy_ids.length
              ? result.policy_ids.map((id) => (describe.get(id) ? `${id} (${describe.get(id)})` : id)).join(', ')
              : 'no policy matched'}
          </Text>
          {result.errors.map((e) => (
            <Text key={e.policy_id} size="sm" c="red">
              {e.policy_id} did not apply: {e.message}
            </Text>
          ))}
          <Text size="sm">
            Principal <Code>{result.principal}</Code>, resource <Code>{result.resource}</Code>
          </Text>
        </Stack>
      ) : null}
    </Stack>
  );
}
