"""Organizations, teams, projects and memberships, and the users behind them: signup's own org, invitations,
roles, the org switcher and the settings pages for members, teams and projects."""
