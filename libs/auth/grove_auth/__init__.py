"""Grove authentication: credentials in, one ``Principal`` out."""
