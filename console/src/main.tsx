import '@mantine/core/styles.css';
import '@mantine/charts/styles.css';
import './theme.css';
import { Alert, MantineProvider, NavLink, createTheme } from '@mantine/core';
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

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="light">
      <BrowserRouter basename="/console">
        <App />
      </BrowserRouter>
    </MantineProvider>
  </StrictMode>,
);
