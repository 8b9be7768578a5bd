"""The code step after the provider moved into the core's pending sign-ins (issue 42).

The holder's 2FA is now asked after the provider too, through the same
``sign_in_steps`` the dashboard's password page uses (core m0026), so this
plugin's own table of members' pending steps goes. A step pending during
the upgrade is lost: the person signs in again (a step lasted minutes).
"""


def up(dialect: str) -> list[str]:
    return ["DROP TABLE oidc_second_factor"]
