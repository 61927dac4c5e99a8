/** Agents: create one (its client secret shown once), then manage it tab by tab. */
import { Button, Group, Select, Stack, Tabs, TextInput, Title } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { all, client, type Item } from '../../api';
import { ProblemAlert, SecretOnce, Section, useAction, useLoad } from '../../ui';
import { DeploymentsTab } from './Deployments';
import { GrantsTab } from './Grants';
import { InvocationsTab } from './Invocations';
import { KvMemoryTab } from './KvMemory';
import { LiveLogsTab } from './LiveLogs';
import { ToolsTab } from './Tools';

export type Agent = Item<'agents.list'>;

export function AgentsPage() {
  const agents = useLoad(() => all(client.agents.list({ limit: 100 })));
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<{ id: string; value: string } | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const { error, act } = useAction();
  const create = () =>
    act(async () => {
      const a = await client.agents.create({ name });
      setSecret({ id: a.client_id, value: a.client_secret });
      setName('');
      setSelected(a.id);
      agents.reload();
    });
  return (
    <Stack>
      <Title order={2}>Agents</Title>
      <Group align="end">
        <TextInput
          label="Agent name"
          value={name}
          onChange={(e) => setName(e.currentTarget.value)}
          onKeyDown={(e) => e.key === 'Enter' && name.trim() && void create()}
        />
        <Button disabled={!name.trim()} onClick={() => void create()}>
          Create agent
        </Button>
      </Group>
      {secret ? <SecretOnce label={`Client secret of ${secret.id}`} value={secret.value} /> : null}
      <ProblemAlert error={error} />
      <Section state={agents} empty={(d) => d.length === 0} emptyText="No agents yet: create one above.">
        {(d) => (
          <Select
            label="Agent"
            data={d.map((a) => ({ value: a.id, label: `${a.name} (${a.client_id})` }))}
            value={selected}
            onChange={setSelected}
            placeholder="Choose an agent"
            searchable
          />
        )}
      </Section>
      {selected && agents.data ? (
        <AgentDetail key={selected} agentId={selected} agents={agents.data} onSecret={setSecret} />
      ) : null}
    </Stack>
  );
}

function AgentDetail({
  agentId,
  agents,
  onSecret,
}: {
  agentId: string;
  agents: Agent[];
  onSecret(s: { id: string; value: string }): void;
}) {
  const tabs: Array<[value: string, label: string, panel: ReactNode]> = [
    ['deployments', 'Deployments', <DeploymentsTab key="deployments" agentId={agentId} onSecret={onSecret} />],
    ['runs', 'Invoke and runs', <InvocationsTab key="runs" agentId={agentId} />],
    ['logs', 'Live logs', <LiveLogsTab key="logs" agentId={agentId} />],
    ['tools', 'Tools', <ToolsTab key="tools" agentId={agentId} />],
    ['grants', 'Grants', <GrantsTab key="grants" agentId={agentId} agents={agents} />],
    ['memory', 'Key/value memory', <KvMemoryTab key="memory" agentId={agentId} />],
  ];
  // keepMounted=false: a tab's streams and polls stop when another tab is shown.
  return (
    <Tabs defaultValue="deployments" keepMounted={false}>
      <Tabs.List aria-label="Agent sections">
        {tabs.map(([value, label]) => (
          <Tabs.Tab key={value} value={value}>
            {label}
          </Tabs.Tab>
        ))}
      </Tabs.List>
      {tabs.map(([value, , panel]) => (
        <Tabs.Panel key={value} value={value} pt="md">
          {panel}
        </Tabs.Panel>
      ))}
    </Tabs>
  );
}
