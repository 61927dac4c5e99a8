import { Badge, Button, Card, JsonInput, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { all, client, type Body } from '../api';
import { ProblemAlert, SecretOnce, Section, TableHead, useAction, useLoad } from '../ui';
import { ServicePanel } from './services/ServicePanel';

const EXAMPLE = JSON.stringify(
  {
    name: 'weather',
    description: 'Weather by city',
    base_url: 'https://api.example.com',
    tools: [
      {
        name: 'get_weather',
        description: 'Weather for a city',
        method: 'GET',
        path: '/weather',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ],
  },
  null,
  2,
);

export function ServicesPage() {
  const services = useLoad(() => all(client.services.listOwn({ limit: 100 })));
  const [mode, setMode] = useState('manifest');
  const [manifest, setManifest] = useState(EXAMPLE);
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const { error, setError, act } = useAction();
  const [secret, setSecret] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);

  const register = () =>
    act(async () => {
      let body: Body<'registry.register'>;
      try {
        body =
          mode === 'manifest'
            ? (JSON.parse(manifest) as Body<'registry.register'>)
            : mode === 'openapi'
              ? { name, openapi_url: url }
              : { name, mcp_url: url };
      } catch (e) {
        return setError(new Error(`The manifest is not valid JSON: ${(e as Error).message}`));
      }
      const s = await client.services.register(body);
      setSecret(s.signing_secret ?? null);
      setSelected(s.id);
      services.reload();
    });

  return (
    <Stack>
      <Title order={2}>My services</Title>
      <Card withBorder>
        <Stack>
          <Title order={3}>Register a service</Title>
          <SegmentedControl
            value={mode}
            onChange={setMode}
            data={[
              { value: 'manifest', label: 'Manifest' },
              { value: 'openapi', label: 'OpenAPI URL' },
              { value: 'mcp', label: 'MCP server URL' },
            ]}
            aria-label="Source"
          />
          {mode === 'manifest' ? (
            <JsonInput
              label="Manifest (JSON)"
              autosize
              minRows={8}
              value={manifest}
              onChange={setManifest}
              data-testid="manifest"
            />
          ) : (
            <>
              <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
              <TextInput
                label={mode === 'openapi' ? 'OpenAPI document URL' : 'MCP endpoint URL (Streamable HTTP)'}
                value={url}
                onChange={(e) => setUrl(e.currentTarget.value)}
              />
            </>
          )}
          <Button onClick={() => void register()}>Register</Button>
          <ProblemAlert error={error} />
          {secret ? <SecretOnce label="Signing secret (verify our requests with it)" value={secret} /> : null}
        </Stack>
      </Card>
      <Section state={services} empty={(d) => d.length === 0} emptyText="No services yet: register one above.">
        {(d) => (
          <Table>
            <TableHead columns={['Service', 'Status', 'Base URL', { hidden: 'Actions' }]} />
            <Table.Tbody>
              {d.map((s) => (
                <Table.Tr key={s.id}>
                  <Table.Td>
                    {s.display_name || s.name}
                    {s.display_name && s.display_name !== s.name ? (
                      <Text span size="xs" c="dimmed">
                        {' '}
                        ({s.name})
                      </Text>
                    ) : null}
                  </Table.Td>
                  <Table.Td>
                    <Badge color={s.status === 'published' ? 'green' : 'gray'}>{s.status}</Badge>
                  </Table.Td>
                  <Table.Td>{s.base_url}</Table.Td>
                  <Table.Td>
                    <Button size="xs" variant="light" onClick={() => setSelected(s.id)} aria-label={`Manage ${s.name}`}>
                      Manage
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
      {selected ? <ServicePanel key={selected} serviceId={selected} onChange={services.reload} /> : null}
    </Stack>
  );
}
