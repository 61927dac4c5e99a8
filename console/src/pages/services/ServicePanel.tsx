/** One of the caller's services: the publish checklist (live), its name and tools, and the reports on it. */
import { Badge, Button, Card, Code, Group, JsonInput, List, Stack, Text, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { client, type Body, type Result } from '../../api';
import { ProblemAlert, Section, useAction, useLoad } from '../../ui';
import { ServiceReports } from './ServiceReports';
import { ServiceSettings } from './ServiceSettings';

type Status = Result<'publishing.verificationStatus'>;
type Domain = Result<'publishing.verifyDomain'>;

const CHECK_COLOR: Record<string, string> = { passed: 'green', failed: 'red' };

export function ServicePanel({ serviceId, onChange }: { serviceId: string; onChange(): void }) {
  const service = useLoad(() => client.services.getOwn(serviceId), [serviceId]);
  const changed = () => {
    service.reload();
    onChange();
  };
  const name = service.data ? service.data.display_name || service.data.name : null;
  return (
    <Stack>
      {name ? (
        <Title order={3} data-testid="managed-service">
          Managing {name}
        </Title>
      ) : null}
      <PublishChecklist serviceId={serviceId} onChange={onChange} exampleTool={service.data?.tools[0]?.name} />
      <Section state={service}>
        {(svc) => (
          <>
            <ServiceSettings service={svc} onChange={changed} />
            <ServiceReports service={svc} onChange={service.reload} />
          </>
        )}
      </Section>
    </Stack>
  );
}

function PublishChecklist({
  serviceId,
  onChange,
  exampleTool,
}: {
  serviceId: string;
  onChange(): void;
  exampleTool?: string;
}) {
  const [status, setStatus] = useState<Status | null>(null);
  const [domain, setDomain] = useState<Domain | null>(null);
  const [tests, setTests] = useState('');
  const { error, setError, act } = useAction();
  const refresh = async () => setStatus(await client.publishing.verificationStatus(serviceId));
  useEffect(() => {
    void refresh().catch(setError);
    // The checklist turns green as the background verification runs: poll it while the panel is open.
    const t = setInterval(() => void refresh().catch(() => undefined), 1000);
    return () => clearInterval(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [serviceId]);
  const step = (fn: () => Promise<unknown>) =>
    act(async () => {
      await fn();
      await refresh();
      onChange();
    });
  const saveTests = () =>
    step(async () => {
      let parsed: Body<'publishing.setVerificationConfig'>['tests'];
      try {
        parsed = (tests.trim() ? JSON.parse(tests) : []) as typeof parsed;
      } catch (e) {
        throw new Error(`The test calls are not valid JSON: ${(e as Error).message}`);
      }
      return client.publishing.setVerificationConfig(serviceId, { tests: parsed });
    });
  return (
    <Card withBorder>
      <Stack>
        <Title order={3}>Publish checklist</Title>
        {status ? (
          <List aria-label="Checklist">
            {Object.entries(status.checklist).map(([k, c]) => (
              <List.Item key={k}>
                <Group gap="xs">
                  <Badge color={CHECK_COLOR[c.status] ?? 'gray'} data-testid={`check-${k}`}>
                    {c.status}
                  </Badge>
                  <Text size="sm">{k.replaceAll('_', ' ')}</Text>
                  {c.detail ? (
                    <Text size="xs" c="dimmed">
                      {c.detail}
                    </Text>
                  ) : null}
                </Group>
              </List.Item>
            ))}
          </List>
        ) : null}
        {status?.verification.tests.length ? (
          <List size="sm" aria-label="Test calls">
            {status.verification.tests.map((t, i) => (
              <List.Item key={i}>
                {t.tool}: {t.status}
                {t.http_status ? ` (HTTP ${t.http_status}, ${t.latency_ms} ms)` : ''}
                {t.error ? ` — ${t.error}` : ''}
              </List.Item>
            ))}
          </List>
        ) : null}
        <Text size="sm">Service status: {status?.status ?? '…'}</Text>
        <Group>
          <Button
            size="xs"
            onClick={() => void step(async () => setDomain(await client.publishing.verifyDomain(serviceId)))}
          >
            Verify domain
          </Button>
        </Group>
        {domain ? (
          <Stack gap={4}>
            <Text size="sm">
              Domain {domain.host}: {domain.status}. Prove ownership with one of:
            </Text>
            {domain.methods.map((m, i) => (
              <Code key={i} block>
                {m.type === 'dns' ? `TXT ${m.name} = ${m.value}` : `${m.url} containing ${m.content}`}
              </Code>
            ))}
          </Stack>
        ) : null}
        <JsonInput
          label="Test calls (verification config)"
          description="The calls functional verification makes before publishing; saving replaces the service's test calls (the API does not read them back)"
          placeholder={`[{"tool": "${exampleTool ?? 'tool_name'}", "arguments": {}}]`}
          value={tests}
          onChange={setTests}
          autosize
          minRows={2}
        />
        <Group>
          <Button size="xs" variant="light" onClick={() => void saveTests()}>
            Save test calls
          </Button>
          <Button size="xs" color="green" onClick={() => void step(() => client.publishing.publish(serviceId))}>
            Publish
          </Button>
          {status?.status === 'published' ? (
            <Button size="xs" variant="default" onClick={() => void step(() => client.publishing.unpublish(serviceId))}>
              Unpublish
            </Button>
          ) : null}
        </Group>
        <ProblemAlert error={error} />
      </Stack>
    </Card>
  );
}
