"""What every endpoint shares: the request pipeline, routing, admin access, allowed origins and the
interface versions a tenant serves.
"""
