/** The marketplace services an agent may call (`/v2/agents/{id}/tools`): subscribe and unsubscribe. */
import { Autocomplete, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useState } from 'react';
import { all, client } from '../../api';
import { ProblemAlert, Section, TableHead, fmtDate, useAction, useLoad } from '../../ui';

export function ToolsTab({ agentId }: { agentId: string }) {
  const tools = useLoad(() => all(client.agents.tools(agentId, { limit: 100 })), [agentId]);
  const services = useLoad(async () => (await all(client.services.list({ limit: 100 }), 300)).map((s) => s.name));
  const [service, setService] = useState('');
  const { error, act } = useAction();
  const subscribe = () =>
    act(async () => {
      await client.agents.subscribeTools(agentId, { service: service.trim() });
      setService('');
      tools.reload();
    });
  const unsubscribe = (name: string) =>
    act(async () => {
      await client.agents.unsubscribeTools(agentId, name);
      tools.reload();
    });
  return (
    <Stack>
      <Title order={3}>Tool subscriptions</Title>
      <Text size="sm" c="dimmed">
        The services whose tools this agent may call with its own token.
      </Text>
      <Group align="end">
        <Autocomplete
          label="Service"
          value={service}
          onChange={setService}
          data={services.data ?? []}
          placeholder="name or id"
        />
        <Button disabled={!service.trim()} onClick={() => void subscribe()}>
          Subscribe agent
        </Button>
      </Group>
      <ProblemAlert error={error} />
      <Section state={tools} empty={(d) => d.length === 0} emptyText="This agent is not subscribed to any service yet.">
        {(d) => (
          <Table data-testid="agent-tools">
            <TableHead columns={['Service', 'Since', { hidden: 'Actions' }]} />
            <Table.Tbody>
              {d.map((t) => (
                <Table.Tr key={t.service_id}>
                  <Table.Td>{t.service}</Table.Td>
                  <Table.Td>{fmtDate(t.subscribed_at)}</Table.Td>
                  <Table.Td>
                    <Button
                      size="xs"
                      color="red"
                      variant="light"
                      onClick={() => void unsubscribe(t.service)}
                      aria-label={`Unsubscribe from ${t.service}`}
                    >
                      Unsubscribe
                    </Button>
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
