"""Files: uploads, their bytes, and their passages read in a bounded child process."""
