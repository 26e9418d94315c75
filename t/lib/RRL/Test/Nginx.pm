package RRL::Test::Nginx;

# One nginx instance of a test file (master and workers, daemonized), made
# by RRL::Test's start_nginx: started and waited for, its error.log read,
# reloaded, stopped; HTTP requests to its ports (RRL::Test::Http).
#
#   my $n = $t->start_nginx($template);
#   $n->get('/?key=a');                 # RRL::Test::Http's response
#   $n->grep_log(qr/re/); $n->wait_log(qr/re/, $count, $timeout);
#   $n->reload($new_template); $n->worker_pids; $n->stop;
#   $n->metrics; $n->zone_metrics(...);  # its /metrics: RRL::Test::Metrics

use strict;
use warnings;

use Carp qw(croak);
use IO::Socket::INET;
use Scalar::Util ();
use Test::More ();
use Time::HiRes qw(time sleep);

use RRL::Test::Env qw(nginx_binary nginx_preload read_file);
use RRL::Test::Http qw(http_parallel http_abort);
use RRL::Test::Metrics;

our @ISA = qw(RRL::Test::Metrics);    # metrics, zone_metrics...

sub new {
    my ($class, %a) = @_;
    my $self = bless { %a, pid => undef, stopped => 0 }, $class;
    Scalar::Util::weaken($self->{t});
    return $self;
}

sub port { $_[0]{ports}{ $_[1] // 0 } }
sub dir { $_[0]{dir} }
sub conf { $_[0]{conf} }
sub error_log { "$_[0]{dir}/error.log" }
sub access_log { "$_[0]{dir}/access.log" }

# start(wait_connected => 1): runs nginx on the instance's config, waits
# until it listens on its ports and, when the config has a
# redis_ratelimit_server and Redis runs, until each worker has connected

sub start {
    my ($self, %opts) = @_;
    my ($ndir, $n) = @$self{qw(dir index)};

    local $ENV{LD_PRELOAD} = nginx_preload();
    my $out = `@{[nginx_binary()]} -p $ndir/ -c $ndir/nginx.conf -e $ndir/error.log 2>&1`;
    croak "nginx$n failed to start (rc " . ($? >> 8) . "): $out"
        . read_file("$ndir/error.log") if $?;

    $self->wait_started;

    my $workers = ($self->{conf} =~ /^\s*worker_processes\s+(\d+)/m) ? $1 : 1;
    my $wait = $opts{wait_connected}
        // ($self->{conf} =~ /^\s*redis_ratelimit_server\s/m
            && $self->{t}->redis_running);
    $self->wait_log(qr/redis_ratelimit: connected to/, $workers, 5)
        or Test::More::diag("nginx$n: workers did not report a connection "
            . "to Redis within 5 s")
        if $wait;

    return $self;
}

sub log_text { read_file($_[0]->error_log) }
sub log_lines { split /\n/, $_[0]->log_text }

# lines of error.log matching $re
sub grep_log {
    my ($self, $re) = @_;
    return grep { $_ =~ $re } $self->log_lines;
}

# waits until error.log has $count lines matching $re
sub wait_log {
    my ($self, $re, $count, $timeout) = @_;
    $count //= 1;
    my $deadline = time + ($timeout // 5);
    while (time < $deadline) {
        return 1 if $self->grep_log($re) >= $count;
        sleep 0.02;
    }
    return 0;
}

# ignore_log(qr/re/): done_testing does not count [alert], [crit] or
# [emerg] lines of this instance matching re (for an expected, reported
# failure, e.g. in a TODO test)
sub ignore_log {
    my ($self, $re) = @_;
    push @{ $self->{ignore_log} }, $re;
    return $self;
}

sub read_pid {
    my ($self) = @_;
    my $p = read_file("$self->{dir}/nginx.pid");
    return $p =~ /^(\d+)/ ? $1 : undef;
}

sub wait_started {
    my ($self) = @_;
    my $deadline = time + 10;

    while (time < $deadline) {
        $self->{pid} //= $self->read_pid;
        my $up = defined $self->{pid};
        for my $port (values %{ $self->{ports} }) {
            my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                PeerPort => $port, Proto => 'tcp');
            if ($s) { close $s } else { $up = 0 }
        }
        return 1 if $up;
        sleep 0.02;
    }

    croak "nginx$self->{index} did not start: " . $self->log_text;
}

# the pids of the master's children (workers), sorted
sub worker_pids {
    my ($self) = @_;
    my $pid = $self->{pid} // $self->read_pid or return ();
    my @p = sort { $a <=> $b } grep { alive($_) }
        map { /(\d+)/ ? $1 : () } `ps --ppid $pid -o pid= 2>/dev/null`;
    return @p;
}

sub alive {
    my ($pid) = @_;
    return 0 unless kill 0, $pid;
    # reparented to an init that may not reap: a zombie is gone too
    my $stat = read_file("/proc/$pid/stat");
    return 0 if $stat =~ /^\d+ \(.*\) Z/s;
    return 1;
}

# graceful stop (QUIT, so exit-time checks such as "open socket left" run),
# then TERM and KILL if it hangs; waits until the master is gone
sub stop {
    my ($self) = @_;
    return if $self->{stopped};
    $self->{stopped} = 1;

    my $pid = $self->{pid} // $self->read_pid or return;

    for my $sig (qw(QUIT TERM KILL)) {
        kill $sig, $pid or last;
        my $deadline = time + ($sig eq 'KILL' ? 5 : 10);
        while (time < $deadline) {
            return 1 unless alive($pid);
            sleep 0.02;
        }
        Test::More::diag("nginx$self->{index} (pid $pid) did not exit on $sig");
    }
}

# reload($template): nginx -s reload, with a new config template if given
# (same ports and directory); waits until the new workers have started and,
# when Redis runs, connected
sub reload {
    my ($self, $template) = @_;
    my $t = $self->{t};

    if (defined $template) {
        $self->{conf} = $t->expand($template, $self->{dir}, $self->{ports});
        open my $fh, '>', "$self->{dir}/nginx.conf" or croak "nginx.conf: $!";
        print $fh $self->{conf};
        close $fh;
    }

    my $workers = ($self->{conf} =~ /^\s*worker_processes\s+(\d+)/m) ? $1 : 1;
    my @old = map { /start worker process (\d+)/ ? $1 : () } $self->log_lines;
    my $started = @old;
    my $connected = () = $self->grep_log(qr/redis_ratelimit: connected to/);

    kill 'HUP', $self->{pid} or croak "kill HUP nginx$self->{index}: $!";

    $self->wait_log(qr/start worker process /, $started + $workers, 10)
        or croak "nginx$self->{index}: no new workers after reload: "
            . $self->log_text;

    # the old workers gone: no request may reach them any more
    my $deadline = time + 10;
    while (time < $deadline && grep { alive($_) } @old) {
        sleep 0.02;
    }
    Test::More::diag("nginx$self->{index}: old workers still alive after reload")
        if grep { alive($_) } @old;

    if ($self->{conf} =~ /^\s*redis_ratelimit_server\s/m && $t->redis_running) {
        $self->wait_log(qr/redis_ratelimit: connected to/, $connected + $workers, 5)
            or Test::More::diag("nginx$self->{index}: new workers did not "
                . "connect to Redis after reload");
    }

    return $self;
}

# http($method, $uri, port => n, %o): RRL::Test::Http::http to port n
# (%%PORT_n%%; %%PORT%% by default)
sub http {
    my ($self, $method, $uri, %o) = @_;
    my $port = $self->port(delete $o{port});
    return RRL::Test::Http::http($port, $method, $uri, %o);
}

sub get { my ($self, $uri, %o) = @_; $self->http('GET', $uri, %o) }

# outcomes($uri, $count): $count GETs of $uri, one after the other:
# "STATUS X-RL-STATUS X-RATELIMIT-REMAINING, ..." ('none' or '-' where absent)
sub outcomes {
    my ($self, $uri, $count) = @_;
    return join ', ', map { my $r = $self->get($uri);
        join ' ', $r->{status} // 'none', $r->{h}{'x-rl-status'} // 'none',
            $r->{h}{'x-ratelimit-remaining'} // '-' } 1 .. $count;
}

sub parallel {
    my ($self, @uris) = @_;
    return http_parallel($self->port, @uris);
}

sub abort {
    my ($self, $uri, $delay) = @_;
    http_abort($self->port, $uri, $delay);
}

1;
