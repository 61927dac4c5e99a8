/** Rename a service (its display name; the `name` in URLs stays) and its tools (the old tool name stays an alias for execution). */
import { Badge, Button, Card, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { client, type Result } from '../../api';
import { ProblemAlert, TableHead, useAction } from '../../ui';

export type OwnService = Result<'registry.getOwn'>;

export function ServiceSettings({ service, onChange }: { service: OwnService; onChange(): void }) {
  const [displayName, setDisplayName] = useState(service.display_name);
  const [names, setNames] = useState<Record<string, string>>({});
  const { error, act } = useAction();
  const [done, setDone] = useState<string | null>(null);
  const rename = () =>
    act(async () => {
      const s = await client.services.update(service.id, { display_name: displayName.trim() });
      setDone(`Display name is now “${s.display_name}”.`);
      onChange();
    });
  const renameTool = (toolId: string, from: string) =>
    act(async () => {
      const t = await client.publishing.renameTool(service.id, toolId, { name: (names[toolId] ?? '').trim() });
      setDone(`Tool ${from} is now ${t.name} (${from} still works as an alias).`);
      setNames((n) => ({ ...n, [toolId]: '' }));
      onChange();
    });
  return (
    <Card withBorder>
      <Stack>
        <Title order={3}>Name and tools</Title>
        <Group align="end">
          <TextInput
            label="Display name"
            description={`Shown in the marketplace; the service is called ${service.name} in calls`}
            value={displayName}
            onChange={(e) => setDisplayName(e.currentTarget.value)}
          />
          <Button
            size="xs"
            onClick={() => void rename()}
            disabled={!displayName.trim() || displayName.trim() === service.display_name}
          >
            Rename service
          </Button>
        </Group>
        <Table>
          <TableHead columns={['Tool', 'Status', 'Rename to']} />
          <Table.Tbody>
            {service.tools.map((t) => (
              <Table.Tr key={t.id}>
                <Table.Td>
                  <Text ff="monospace" size="sm" data-testid={`tool-${t.id}`}>
                    {t.name}
                  </Text>
                  {t.aliases.length ? (
                    <Text size="xs" c="dimmed">
                      also: {t.aliases.join(', ')}
                    </Text>
                  ) : null}
                </Table.Td>
                <Table.Td>
                  <Badge color={t.status === 'degraded' ? 'orange' : 'green'}>{t.status}</Badge>
                </Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap">
                    <TextInput
                      size="xs"
                      aria-label={`New name for ${t.name}`}
                      value={names[t.id] ?? ''}
                      onChange={(e) => setNames({ ...names, [t.id]: e.currentTarget.value })}
                    />
                    <Button
                      size="xs"
                      variant="light"
                      disabled={!names[t.id]?.trim()}
                      onClick={() => void renameTool(t.id, t.name)}
                      aria-label={`Rename ${t.name}`}
                    >
                      Rename
                    </Button>
                  </Group>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
        {done ? (
          <Text size="sm" role="status">
            {done}
          </Text>
        ) : null}
        <ProblemAlert error={error} />
      </Stack>
    </Card>
  );
}
