import '@mantine/core/styles.css';
import '@mantine/charts/styles.css';
import { Alert, MantineProvider, NavLink, createTheme, type CSSVariablesResolver } from '@mantine/core';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router-dom';
import { App } from './App';

// Shade 8 of each color: white text on filled buttons and badges meets WCAG AA (4.5:1); shade 6 does not.
// autoContrast picks dark or light text on filled colors; alert titles use the body text color.
const theme = createTheme({
  primaryShade: { light: 8, dark: 8 },
  autoContrast: true,
  luminanceThreshold: 0.18,
  components: {
    Alert: Alert.extend({ styles: { title: { color: 'var(--mantine-color-text)' } } }),
    NavLink: NavLink.extend({ defaultProps: { variant: 'filled' } }),
  },
});

/**
 * Accessible contrast in the light scheme (axe-core measured Mantine's defaults below WCAG AA 4.5:1):
 * "dimmed" text in gray 7 (gray 6: 3.3:1); light variants (alerts, light buttons and badges) with
 * shade-9 text, and a hover that lightens to shade 0 (Mantine's shade 2 gave 4.0:1).
 */
const LIGHT_VARIANT_COLORS = ['blue', 'green', 'red', 'yellow', 'teal', 'gray'];
const contrast: CSSVariablesResolver = () => ({
  variables: {},
  dark: {},
  light: {
    '--mantine-color-dimmed': 'var(--mantine-color-gray-7)',
    ...Object.fromEntries(
      LIGHT_VARIANT_COLORS.flatMap((c) => [
        [`--mantine-color-${c}-light-color`, `var(--mantine-color-${c}-9)`],
        [`--mantine-color-${c}-light-hover`, `var(--mantine-color-${c}-0)`],
      ]),
    ),
  },
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="light" cssVariablesResolver={contrast}>
      <BrowserRouter basename="/console">
        <App />
      </BrowserRouter>
    </MantineProvider>
  </StrictMode>,
);
