import { Badge, Button, Card, Code, Group, JsonInput, List, SegmentedControl, Stack, Table, Text, TextInput, Title, VisuallyHidden } from '@mantine/core';
import { useEffect, useState } from 'react';
import { api, listAll } from '../api';
import { ProblemAlert, SecretOnce, Section, useLoad } from '../ui';

interface OwnService {
  id: string;
  name: string;
  status: string;
  base_url: string;
  tools?: Array<{ id: string; name: string }>;
}
interface Check {
  status: 'passed' | 'failed' | 'pending' | string;
  detail?: string | null;
}
interface Status {
  status: string;
  verification: { state: string; tests: Array<{ tool: string; status: string; error?: string | null }> };
  checklist: Record<string, Check>;
}

const EXAMPLE = JSON.stringify(
  { name: 'weather', description: 'Weather by city', base_url: 'https://api.example.com', tools: [{ name: 'get_weather', description: 'Weather for a city', method: 'GET', path: '/weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }] },
  null,
  2,
);

export function ServicesPage() {
  const services = useLoad(() => listAll<OwnService>('/owner/services'));
  const [mode, setMode] = useState('manifest');
  const [manifest, setManifest] = useState(EXAMPLE);
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);

  const register = async () => {
    setError(null);
    try {
      const body = mode === 'manifest' ? JSON.parse(manifest) : mode === 'openapi' ? { name, openapi_url: url } : { name, mcp_url: url };
      const s = await api<{ id: string; signing_secret: string }>('POST', '/owner/services', body);
      setSecret(s.signing_secret);
      setSelected(s.id);
      services.reload();
    } catch (e) {
      setError(e instanceof SyntaxError ? new Error(`The manifest is not valid JSON: ${e.message}`) : e);
    }
  };

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
            <JsonInput label="Manifest (JSON)" autosize minRows={8} value={manifest} onChange={setManifest} data-testid="manifest" />
          ) : (
            <>
              <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
              <TextInput label={mode === 'openapi' ? 'OpenAPI document URL' : 'MCP server URL'} value={url} onChange={(e) => setUrl(e.currentTarget.value)} />
            </>
          )}
          <Button onClick={() => void register()}>Register</Button>
          <ProblemAlert error={error} />
          {secret ? <SecretOnce label="Signing secret (verify our requests with it)" value={secret} /> : null}
        </Stack>
      </Card>
      <Section state={services} empty={(d) => d.length === 0}>
        {(d) => (
          <Table>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Service</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Base URL</Table.Th>
                <Table.Th>
                  <VisuallyHidden>Actions</VisuallyHidden>
                </Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {d.map((s) => (
                <Table.Tr key={s.id}>
                  <Table.Td>{s.name}</Table.Td>
                  <Table.Td>
                    <Badge color={s.status === 'published' ? 'green' : 'gray'}>{s.status}</Badge>
                  </Table.Td>
                  <Table.Td>{s.base_url}</Table.Td>
                  <Table.Td>
                    <Button size="xs" variant="light" onClick={() => setSelected(s.id)} aria-label={`Publish checklist of ${s.name}`}>
                      Publish checklist
                    </Button>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Section>
      {selected ? <PublishPanel key={selected} serviceId={selected} onChange={services.reload} /> : null}
    </Stack>
  );
}

function PublishPanel({ serviceId, onChange }: { serviceId: string; onChange(): void }) {
  const [status, setStatus] = useState<Status | null>(null);
  const [domain, setDomain] = useState<{ status: string; methods: Array<Record<string, string>> } | null>(null);
  const [tests, setTests] = useState('[]');
  const [error, setError] = useState<unknown>(null);
  const refresh = async () => setStatus(await api<Status>('GET', `/v1/services/${serviceId}/publish/verification-status`));
  useEffect(() => {
    void refresh().catch(setError);
    const t = setInterval(() => void refresh().catch(() => undefined), 1000);
    return () => clearInterval(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [serviceId]);
  const step = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
      await refresh();
      onChange();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <Card withBorder>
      <Stack>
        <Title order={3}>Publish checklist</Title>
        {status ? (
          <List aria-label="Checklist">
            {Object.entries(status.checklist).map(([k, c]) => (
              <List.Item key={k}>
                <Group gap="xs">
                  <Badge color={c.status === 'passed' ? 'green' : c.status === 'failed' ? 'red' : 'gray'} data-testid={`check-${k}`}>
                    {c.status}
                  </Badge>
                  <Text size="sm">{k.replaceAll('_', ' ')}</Text>
                  {c.detail ? <Text size="xs" c="dimmed">{c.detail}</Text> : null}
                </Group>
              </List.Item>
            ))}
          </List>
        ) : null}
        <Text size="sm">Service status: {status?.status ?? '…'}</Text>
        <Group>
          <Button size="xs" onClick={() => void step(async () => setDomain(await api('POST', `/v1/services/${serviceId}/verify-domain`)))}>
            Verify domain
          </Button>
        </Group>
        {domain ? (
          <Stack gap={4}>
            <Text size="sm">Domain: {domain.status}. Prove ownership with one of:</Text>
            {domain.methods.map((m, i) => (
              <Code key={i} block>
                {m.type === 'dns' ? `TXT ${m.name} = ${m.value}` : `${m.url} containing ${m.content}`}
              </Code>
            ))}
          </Stack>
        ) : null}
        <JsonInput label="Test calls (verification config)" value={tests} onChange={setTests} autosize minRows={2} />
        <Group>
          <Button size="xs" variant="light" onClick={() => void step(() => api('POST', `/v1/services/${serviceId}/verification-config`, { tests: JSON.parse(tests) }))}>
            Save test calls
          </Button>
          <Button size="xs" color="green" onClick={() => void step(() => api('POST', `/v1/services/${serviceId}/publish`))}>
            Publish
          </Button>
        </Group>
        <ProblemAlert error={error} />
      </Stack>
    </Card>
  );
}
