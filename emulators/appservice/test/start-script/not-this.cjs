// App Service runs the start script, not main, when package.json has both.
throw new Error('main ran instead of the start script');
