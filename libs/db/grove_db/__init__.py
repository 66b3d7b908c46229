"""Grove's database layer: migrations, pools, tenant transactions and role checks."""
