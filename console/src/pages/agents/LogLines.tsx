/** Log lines of agent runs, oldest first: time, stream (stdout / stderr / platform with its level), text. */
import { Badge, Group, ScrollArea, Stack, Text } from '@mantine/core';
import type { LogEvent } from '@agent-platform/sdk';

const STREAM_COLOR: Record<string, string> = { stdout: 'gray', stderr: 'orange', platform: 'blue' };

export function LogLines({ lines, testId, label }: { lines: LogEvent[]; testId: string; label: string }) {
  return (
    <ScrollArea.Autosize mah={320} type="auto">
      {/* role=log: a screen reader announces lines as they arrive (WAI-ARIA 1.2 §5.4). */}
      <Stack gap={2} role="log" aria-label={label} data-testid={testId} tabIndex={0}>
        {lines.map((l, i) => (
          <Group key={i} gap="xs" wrap="nowrap" align="baseline">
            <Text size="xs" c="dimmed" ff="monospace" style={{ whiteSpace: 'nowrap' }}>
              {l.ts ? new Date(l.ts).toLocaleTimeString() : ''}
            </Text>
            <Badge size="xs" color={l.level === 'error' ? 'red' : (STREAM_COLOR[l.stream ?? 'stdout'] ?? 'gray')}>
              {l.stream === 'platform' && l.level ? l.level : (l.stream ?? 'log')}
            </Badge>
            <Text size="sm" ff="monospace" style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-word' }}>
              {l.message}
              {l.fields && Object.keys(l.fields).length ? ` ${JSON.stringify(l.fields)}` : ''}
            </Text>
          </Group>
        ))}
      </Stack>
    </ScrollArea.Autosize>
  );
}
