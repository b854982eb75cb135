namespace kiln {}
