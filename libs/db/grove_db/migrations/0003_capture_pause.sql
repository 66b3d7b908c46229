-- An account can pause automatic capture: saves an agent makes on its own initiative
-- (capture = 'automatic') are refused while explicit saves keep working.
ALTER TABLE accounts ADD COLUMN automatic_capture_paused boolean NOT NULL DEFAULT false;
